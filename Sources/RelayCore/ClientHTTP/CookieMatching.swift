/// The matching rules of RFC 6265 §5.1.3 and §5.1.4, which decide where a cookie goes.
enum CookieMatching {
    /// §5.1.3: identical, or `domain` is a suffix of `host` on a label boundary and `host`
    /// is a name (an IP address has no parent domains).
    static func domainMatches(host: String, domain: String, hostIsName: Bool) -> Bool {
        if host == domain { return true }
        guard hostIsName, host.utf8.count > domain.utf8.count, host.hasSuffix(domain) else { return false }
        let boundary = host.utf8.index(host.utf8.endIndex, offsetBy: -domain.utf8.count - 1)
        return host.utf8[boundary] == UInt8(ascii: ".")
    }

    /// §5.1.4: the directory of the request path: `/` unless the path has a `/` after its first byte.
    static func defaultPath(requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let lastSlash = requestPath.lastIndex(of: "/"),
              lastSlash != requestPath.startIndex
        else { return "/" }
        return String(requestPath[..<lastSlash])
    }

    /// §5.1.4: identical, or `cookiePath` is a prefix ending in `/` or followed by `/`.
    static func pathMatches(requestPath: String, cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        if cookiePath.hasSuffix("/") { return true }
        let next = requestPath.utf8.index(requestPath.utf8.startIndex, offsetBy: cookiePath.utf8.count)
        return requestPath.utf8[next] == UInt8(ascii: "/")
    }
}
