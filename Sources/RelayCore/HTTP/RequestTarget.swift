/// The four request-target forms of RFC 9112 3.2, split just enough to route the request.
///
/// Host text is not normalized here (the host normalizer does that); only the structure is
/// checked. Errors come back as `Result<RequestTarget, ReasonCode>`: `.badTarget` for
/// structural faults, `.ambiguousHost` for userinfo (`user@host`), `.unsupportedScheme` for
/// schemes other than http and https.
public enum RequestTarget: Equatable, Sendable {
    /// `CONNECT host:port` (port required).
    case authority(RawHost, port: UInt16)
    /// `http://host[:port]/path?query`; scheme lowercased, port defaulted (80 http, 443 https),
    /// path `/` when the URI has none.
    case absolute(scheme: String, RawHost, port: UInt16, pathAndQuery: String)
    /// `/path?query`, as sent to an origin server (not a proxy request).
    case origin(String)
    /// `OPTIONS *`.
    case asterisk

    /// Splits `target` for `method`. CONNECT takes only authority-form; `*` only with
    /// OPTIONS; other methods take origin-form or absolute-form. Fragments (`#`), empty
    /// hosts, empty or zero ports, leading zeros in ports and anything outside visible ASCII
    /// are refused.
    public static func parse(method: String, target: String) -> Result<RequestTarget, ReasonCode> {
        let bytes = Array(target.utf8)
        guard !bytes.isEmpty, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), !bytes.contains(UInt8(ascii: "#")) else {
            return .failure(.badTarget)
        }
        if method == "CONNECT" {
            return parseAuthority(bytes[...], portRequired: true).map { .authority($0.host, port: $0.port ?? 0) }
        }
        if bytes == [UInt8(ascii: "*")] {
            return method == "OPTIONS" ? .success(.asterisk) : .failure(.badTarget)
        }
        if bytes[0] == UInt8(ascii: "/") {
            return .success(.origin(target))
        }
        return parseAbsolute(bytes)
    }

    /// `scheme "://" authority [path-abempty] ["?" query]`.
    private static func parseAbsolute(_ bytes: [UInt8]) -> Result<RequestTarget, ReasonCode> {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return .failure(.badTarget) }
        let schemeBytes = bytes[..<colon]
        guard isAlpha(schemeBytes[schemeBytes.startIndex]),
              schemeBytes.allSatisfy({ isAlpha($0) || HTTPBytes.isDigit($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E })
        else { return .failure(.badTarget) }
        // Without "//" this is no absolute URI we could forward (`host:port` sent with GET
        // parses as scheme "host"), so it is a bad target before it is an odd scheme.
        let rest = bytes[(colon + 1)...]
        guard rest.starts(with: [0x2F, 0x2F]) else { return .failure(.badTarget) }
        let scheme = String(decoding: schemeBytes.map(HTTPBytes.asciiLowercased), as: UTF8.self)
        let defaultPort: UInt16
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: return .failure(.unsupportedScheme)
        }
        let authorityStart = rest.startIndex + 2
        let authorityEnd = bytes[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? bytes.endIndex
        let authority: (host: RawHost, port: UInt16?)
        switch parseAuthority(bytes[authorityStart..<authorityEnd], portRequired: false) {
        case .success(let parsed): authority = parsed
        case .failure(let code): return .failure(code)
        }
        var path = String(decoding: bytes[authorityEnd...], as: UTF8.self)
        if path.isEmpty {
            path = "/"
        } else if path.utf8.first == UInt8(ascii: "?") {
            path = "/" + path
        }
        return .success(.absolute(scheme: scheme, authority.host, port: authority.port ?? defaultPort, pathAndQuery: path))
    }

    /// `host [":" port]` with `host` a reg-name, IPv4 text or `[IPv6]`.
    private static func parseAuthority(_ bytes: ArraySlice<UInt8>, portRequired: Bool) -> Result<(host: RawHost, port: UInt16?), ReasonCode> {
        // Userinfo lets `http://trusted@evil/` read as two different hosts to two readers.
        if bytes.contains(UInt8(ascii: "@")) { return .failure(.ambiguousHost) }
        var hostBytes: ArraySlice<UInt8>
        var bracketed = false
        var afterHost: ArraySlice<UInt8>
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return .failure(.badTarget) }
            hostBytes = bytes[(bytes.startIndex + 1)..<close]
            bracketed = true
            afterHost = bytes[(close + 1)...]
            if hostBytes.contains(UInt8(ascii: "[")) { return .failure(.badTarget) }
        } else {
            let colon = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.endIndex
            hostBytes = bytes[..<colon]
            afterHost = bytes[colon...]
            if hostBytes.contains(UInt8(ascii: "]")) { return .failure(.badTarget) }
        }
        guard !hostBytes.isEmpty,
              !hostBytes.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") })
        else { return .failure(.badTarget) }

        var port: UInt16?
        if afterHost.isEmpty {
            if portRequired { return .failure(.badTarget) }
        } else {
            guard afterHost.first == UInt8(ascii: ":") else { return .failure(.badTarget) }
            let digits = afterHost.dropFirst()
            guard digits.count <= 5, digits.first != UInt8(ascii: "0"),
                  let value = HTTPBytes.parseDecimal(digits, max: UInt64(UInt16.max)), value > 0
            else { return .failure(.badTarget) }
            port = UInt16(value)
        }
        return .success((RawHost(text: String(decoding: hostBytes, as: UTF8.self), bracketed: bracketed), port))
    }

    private static func isAlpha(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
}
