/// Why a redirect was not followed. The 3xx response itself is then the caller's to report.
public struct RedirectError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: String, Sendable {
        case tooManyRedirects = "too-many-redirects"
        case badLocation = "bad-location"
        case insecureRedirect = "insecure-redirect"
        case bodyNotReplayable = "body-not-replayable"
    }

    private let code_: Code
    /// For `bad-location`, why the `Location` did not parse.
    public let urlError: ClientURLError?

    private init(_ code: Code, urlError: ClientURLError? = nil) {
        self.code_ = code
        self.urlError = urlError
    }

    /// The stable machine-readable code, e.g. `insecure-redirect`.
    public var code: String { code_.rawValue }

    /// `code`, with the URL error when there is one.
    public var description: String { urlError.map { "\(code): \($0)" } ?? code }

    /// The hop limit was reached (a loop, most likely).
    public static let tooManyRedirects = RedirectError(.tooManyRedirects)
    /// A `Location` that does not resolve to an http(s) URL the client accepts.
    public static func badLocation(_ error: ClientURLError) -> RedirectError { RedirectError(.badLocation, urlError: error) }
    /// https → http, refused unless `RedirectPolicy.allowsHTTPSDowngrade`.
    public static let insecureRedirect = RedirectError(.insecureRedirect)
    /// A 307/308 must resend the body, and the body was a stream already consumed.
    public static let bodyNotReplayable = RedirectError(.bodyNotReplayable)
}
