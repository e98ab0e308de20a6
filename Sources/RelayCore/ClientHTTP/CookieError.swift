/// Why a `Set-Cookie` was not stored. The response it came with is still delivered: a
/// refused cookie is a fact for the log, not a failed request.
public struct CookieError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: String, Sendable {
        case malformed = "malformed-cookie"
        case tooLarge = "cookie-too-large"
        case domainMismatch = "cookie-domain-mismatch"
        case publicSuffix = "cookie-public-suffix"
    }

    private let code_: Code
    /// The cookie's name when it had one (never its value, which may be a session token).
    public let cookieName: String?

    private init(_ code: Code, _ cookieName: String?) {
        self.code_ = code
        self.cookieName = cookieName
    }

    /// The stable machine-readable code, e.g. `cookie-public-suffix`.
    public var code: String { code_.rawValue }

    /// `code`, with the cookie's name when known.
    public var description: String { cookieName.map { "\(code): \($0)" } ?? code }

    /// No `=` in the name-value pair, or an empty name (RFC 6265 §5.2).
    public static let malformed = CookieError(.malformed, nil)
    /// Name, value and attributes together longer than `CookieJar.maxCookieSize`.
    public static func tooLarge(_ name: String) -> CookieError { CookieError(.tooLarge, name) }
    /// A `Domain` the request host does not domain-match: a cookie for another site.
    public static func domainMismatch(_ name: String) -> CookieError { CookieError(.domainMismatch, name) }
    /// A public suffix (`com`, `co.uk`) as `Domain` on a host that is not that suffix itself.
    public static func publicSuffix(_ name: String) -> CookieError { CookieError(.publicSuffix, name) }
}
