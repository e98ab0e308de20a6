/// Why the client could not answer an authentication challenge.
///
/// `code` is stable and machine-readable; `parameter` names the challenge parameter or
/// message field at fault, and `detail` carries a mechanism's own text (GSS-API status
/// lines). None of them ever holds a user name, password, hash or token, so the error is
/// safe to log and to show.
public struct ClientAuthError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: String, Sendable {
        case unsupportedScheme = "unsupported-scheme"
        case badChallenge = "bad-challenge"
        case loop = "loop"
        case noCredentials = "no-credentials"
        case badCredentials = "bad-credentials"
        case negotiateFailed = "negotiate-failed"
        case mutualAuthFailed = "mutual-auth-failed"
    }

    private let code_: Code
    /// The challenge parameter or NTLM field at fault, when there is one (never its value).
    public let parameter: String?
    /// A mechanism's own explanation (GSS-API status text), when there is one.
    public let detail: String?

    private init(_ code: Code, parameter: String? = nil, detail: String? = nil) {
        self.code_ = code
        self.parameter = parameter
        self.detail = detail
    }

    /// The stable machine-readable code, e.g. `bad-challenge`.
    public var code: String { code_.rawValue }

    /// `code`, then the parameter and the detail when present.
    public var description: String {
        var text = code
        if let parameter { text += ": \(parameter)" }
        if let detail { text += " (\(detail))" }
        return text
    }

    /// No offered scheme is one this client speaks.
    public static let unsupportedScheme = ClientAuthError(.unsupportedScheme)
    /// The peer refused an answer built from these credentials, or keeps asking: asking
    /// again with the same credentials would go round for ever.
    public static let loop = ClientAuthError(.loop)
    /// A scheme this client speaks was offered, but the credentials cannot answer it (no
    /// password for Basic/Digest/NTLM, no usable Kerberos ticket for Negotiate).
    public static let noCredentials = ClientAuthError(.noCredentials)

    /// A challenge that breaks the grammar or its scheme's rules; `parameter` says where.
    public static func badChallenge(_ parameter: String) -> ClientAuthError {
        ClientAuthError(.badChallenge, parameter: parameter)
    }

    /// Credentials the chosen scheme cannot carry (a `:` in a Basic user name, control
    /// characters, non-ASCII names for an OEM-only NTLM peer); `parameter` says which part.
    public static func badCredentials(_ parameter: String) -> ClientAuthError {
        ClientAuthError(.badCredentials, parameter: parameter)
    }

    /// The peer's final Negotiate token, sent with its success, does not prove it is the
    /// service the ticket was for (GSS-API rejected it, or it left the context unfinished):
    /// the response must not be used. `detail` is the mechanism's status text.
    public static func mutualAuthFailed(_ detail: String) -> ClientAuthError {
        ClientAuthError(.mutualAuthFailed, detail: detail)
    }

    /// The Negotiate mechanism (GSS-API) failed; `detail` is its status text.
    public static func negotiateFailed(_ detail: String) -> ClientAuthError {
        ClientAuthError(.negotiateFailed, detail: detail)
    }
}
