/// A URI reference split into its five RFC 3986 components (Appendix B), and the reference
/// resolution of §5.2 over them.
///
/// It knows nothing of http: `ClientURL` parses what resolution produces and applies its own
/// rules there, so one parser decides what a valid URL is.
struct URIReference: Equatable {
    var scheme: String?
    var authority: String?
    var path: String
    var query: String?

    init(scheme: String?, authority: String?, path: String, query: String?) {
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.query = query
    }

    /// `^(([^:/?#]+):)?(//([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))?`, the fragment dropped.
    init(parsing text: String) {
        var rest = Substring(text)
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        if let colon = rest.firstIndex(where: { ":/?".contains($0) }), rest[colon] == ":", colon > rest.startIndex {
            scheme = String(rest[..<colon])
            rest = rest[rest.index(after: colon)...]
        } else {
            scheme = nil
        }
        if rest.hasPrefix("//") {
            let start = rest.index(rest.startIndex, offsetBy: 2)
            let end = rest[start...].firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            authority = String(rest[start..<end])
            rest = rest[end...]
        } else {
            authority = nil
        }
        if let question = rest.firstIndex(of: "?") {
            path = String(rest[..<question])
            query = String(rest[rest.index(after: question)...])
        } else {
            path = String(rest)
            query = nil
        }
    }

    /// §5.3 component recomposition, without fragment.
    var recomposed: String {
        var text = ""
        if let scheme { text += scheme + ":" }
        if let authority { text += "//" + authority }
        text += path
        if let query { text += "?" + query }
        return text
    }

    /// §5.2.2, strict: a reference with a scheme is absolute even when it is the base's scheme.
    func resolve(_ reference: URIReference) -> URIReference {
        if let scheme = reference.scheme {
            return URIReference(scheme: scheme, authority: reference.authority,
                                path: Self.removingDotSegments(reference.path), query: reference.query)
        }
        if let authority = reference.authority {
            return URIReference(scheme: scheme, authority: authority,
                                path: Self.removingDotSegments(reference.path), query: reference.query)
        }
        if reference.path.isEmpty {
            return URIReference(scheme: scheme, authority: authority, path: path, query: reference.query ?? query)
        }
        let merged = reference.path.hasPrefix("/") ? reference.path : merge(reference.path)
        return URIReference(scheme: scheme, authority: authority,
                            path: Self.removingDotSegments(merged), query: reference.query)
    }

    /// §5.2.3.
    private func merge(_ referencePath: String) -> String {
        if authority != nil && path.isEmpty { return "/" + referencePath }
        guard let slash = path.lastIndex(of: "/") else { return referencePath }
        return String(path[...slash]) + referencePath
    }

    /// Dot segments removed from the path part of an origin-form target, the query untouched.
    static func removingDotSegments(fromTarget target: String) -> String {
        guard let question = target.firstIndex(of: "?") else { return removingDotSegments(target) }
        return removingDotSegments(String(target[..<question])) + target[question...]
    }

    /// §5.2.4, step by step over the input buffer.
    static func removingDotSegments(_ path: String) -> String {
        var input = Substring(path)
        var output: [Substring] = []
        while !input.isEmpty {
            if input.hasPrefix("../") {
                input = input.dropFirst(3)
            } else if input.hasPrefix("./") {
                input = input.dropFirst(2)
            } else if input.hasPrefix("/./") {
                input = input.dropFirst(2)
            } else if input == "/." {
                input = "/"
            } else if input.hasPrefix("/../") {
                input = input.dropFirst(3)
                if !output.isEmpty { output.removeLast() }
            } else if input == "/.." {
                input = "/"
                if !output.isEmpty { output.removeLast() }
            } else if input == "." || input == ".." {
                input = ""
            } else {
                // The first segment with its leading "/", up to (not including) the next "/".
                let searchFrom = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let end = input[searchFrom...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[..<end])
                input = input[end...]
            }
        }
        return output.joined()
    }
}
