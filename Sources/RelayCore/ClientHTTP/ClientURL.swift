/// An absolute `http://` or `https://` URL as the client library sends it: a normalised host,
/// the port with the scheme's default filled in, and the origin-form request target.
///
/// Parsing is strict where two readers could disagree on the host (userinfo, backslashes,
/// raw IDN, non-canonical IPv4) and refuses spaces and control bytes rather than guessing an
/// encoding for them. Bytes above 0x7F in the path or query are percent-encoded as browsers
/// do. The fragment is dropped: it never goes on the wire. Dot segments are removed from the
/// path (RFC 3986 §5.2.4), as curl does unless told otherwise.
public struct ClientURL: Hashable, Sendable, CustomStringConvertible {
    /// The schemes the client speaks.
    public enum Scheme: String, Hashable, Sendable {
        case http
        case https

        /// 80 for http, 443 for https.
        public var defaultPort: UInt16 { self == .http ? 80 : 443 }
    }

    /// `http` or `https`.
    public let scheme: Scheme
    /// The host, lowercased, one trailing dot dropped; IP literals parsed.
    public let host: Host
    /// The port, the scheme's default when the URL named none.
    public let port: UInt16
    /// Path and query in origin-form (`/a/b?x=1`), never empty.
    public let target: String

    /// Parses an absolute URL.
    public init(parsing text: String) throws(ClientURLError) {
        var bytes = Array(text.utf8)
        if bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) { throw .controlCharacter }
        // WHATWG parsers read `\` as `/` in http(s) URLs, RFC 3986 parsers do not: refused
        // so `http://evil\@good/` cannot name two hosts.
        if bytes.contains(UInt8(ascii: "\\")) { throw .malformed("backslash in URL") }
        if let hash = bytes.firstIndex(of: UInt8(ascii: "#")) { bytes.removeSubrange(hash...) }

        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { throw .malformed("no scheme") }
        guard bytes[(colon + 1)...].starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) else {
            // `mailto:x` is a well-formed URL of a scheme we do not speak, not a broken one.
            let scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
            if ClientURL.isScheme(bytes[..<colon]) && scheme != "http" && scheme != "https" {
                throw .unsupportedScheme(scheme)
            }
            throw .malformed("not an absolute URL with '//' after the scheme")
        }
        let authorityStart = colon + 3
        let authorityEnd = bytes[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? bytes.endIndex
        let authority = bytes[authorityStart..<authorityEnd]
        if authority.contains(where: { $0 >= 0x80 }) {
            throw .badHost("non-ASCII host (IDN must be given as punycode xn--)")
        }
        let rest = ClientURL.percentEncodingNonASCII(bytes[authorityEnd...])
        let ascii = String(decoding: bytes[..<authorityEnd] + rest, as: UTF8.self)

        guard case .success(.absolute(let schemeText, let rawHost, let port, let pathAndQuery))
                = RequestTarget.parse(method: "GET", target: ascii)
        else {
            throw ClientURL.diagnose(ascii, scheme: bytes[..<colon], authority: authority)
        }
        guard let scheme = Scheme(rawValue: schemeText) else { throw .unsupportedScheme(schemeText) }
        switch HostNormalizer.normalize(rawHost.text, bracketed: rawHost.bracketed) {
        case .success(let host): self.host = host
        case .failure(let error): throw .badHost(error.detail)
        }
        self.scheme = scheme
        self.port = port
        self.target = URIReference.removingDotSegments(fromTarget: pathAndQuery)
    }

    /// The URL of `target` (origin-form: path and query, starting with `/`) at `origin`,
    /// such as a relay's status URL; checked by the same rules as `init(parsing:)`.
    public init(origin: ClientOrigin, target: String) throws(ClientURLError) {
        guard target.hasPrefix("/") else { throw .malformed("target '\(target)' does not start with '/'") }
        self = try ClientURL(parsing: origin.description + target)
    }

    /// The (scheme, host, port) this URL belongs to.
    public var origin: ClientOrigin { ClientOrigin(scheme: scheme, host: host, port: port) }

    /// `host` or `host:port` when the port is not the scheme's default: the `Host` header value.
    public var authority: String {
        port == scheme.defaultPort ? host.description : "\(host):\(port)"
    }

    /// The path without the query (what cookie paths are matched against).
    public var path: String {
        guard let question = target.firstIndex(of: "?") else { return target }
        return String(target[..<question])
    }

    /// The query without its `?`, or nil when there is none.
    public var query: String? {
        guard let question = target.firstIndex(of: "?") else { return nil }
        return String(target[target.index(after: question)...])
    }

    /// The host as cookies name it: IPv6 without brackets.
    public var cookieHost: String {
        switch host {
        case .name(let name): return name
        case .ipv4(let address): return address.description
        case .ipv6(let address): return address.description
        }
    }

    /// `scheme://authority/target`, the default port left out.
    public var description: String { "\(scheme.rawValue)://\(authority)\(target)" }

    /// Resolves a reference (a redirect's `Location`, say) against this URL as RFC 3986 §5.2
    /// says, then parses the result with the same rules as `init(parsing:)`.
    public func resolving(_ reference: String) throws(ClientURLError) -> ClientURL {
        let referenceBytes = Array(reference.utf8)
        if referenceBytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) { throw .controlCharacter }
        let base = URIReference(scheme: scheme.rawValue, authority: authority, path: path, query: query)
        return try ClientURL(parsing: base.resolve(URIReference(parsing: reference)).recomposed)
    }

    /// Why `RequestTarget` refused text that starts `scheme://`: its answer is one reason
    /// code for several faults the caller needs told apart.
    private static func diagnose(_ text: String, scheme: ArraySlice<UInt8>, authority: ArraySlice<UInt8>) -> ClientURLError {
        let schemeText = String(decoding: scheme, as: UTF8.self).lowercased()
        guard isScheme(scheme) else { return .malformed("bad scheme '\(schemeText)'") }
        guard schemeText == "http" || schemeText == "https" else { return .unsupportedScheme(schemeText) }
        if authority.contains(UInt8(ascii: "@")) { return .userinfo }
        let hostEnd: ArraySlice<UInt8>.Index
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else {
                return .badHost("unclosed '[' in host")
            }
            hostEnd = close + 1
        } else {
            hostEnd = authority.firstIndex(of: UInt8(ascii: ":")) ?? authority.endIndex
        }
        let host = authority[..<hostEnd]
        if host.isEmpty || host.elementsEqual("[]".utf8) { return .missingHost }
        let afterHost = authority[hostEnd...]
        if afterHost.first == UInt8(ascii: ":") {
            return .badPort(String(decoding: afterHost.dropFirst(), as: UTF8.self))
        }
        return .malformed("cannot parse '\(text)'")
    }

    /// `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )` (RFC 3986 §3.1).
    private static func isScheme(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.first.map(isAlpha) == true
            && bytes.allSatisfy { isAlpha($0) || HTTPBytes.isDigit($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E }
    }

    private static func isAlpha(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }

    /// Bytes above 0x7F as `%XX` (uppercase hex, as RFC 3986 §2.1 recommends).
    private static func percentEncodingNonASCII(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for byte in bytes {
            if byte < 0x80 {
                out.append(byte)
            } else {
                out.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            }
        }
        return out
    }
}
