/// Why a URL (or a redirect's `Location`) was refused by `ClientURL`.
///
/// `code` is stable and machine-readable (`unsupported-scheme`, `bad-port`, ...) so the
/// command-line client can map it to an exit status and tests can assert on it; `detail`
/// is for people and may change.
public struct ClientURLError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: String, Sendable {
        case malformed = "malformed-url"
        case unsupportedScheme = "unsupported-scheme"
        case userinfo = "userinfo"
        case missingHost = "missing-host"
        case badHost = "bad-host"
        case badPort = "bad-port"
        case controlCharacter = "control-character"
    }

    private let code_: Code
    /// A short explanation for logs and error messages.
    public let detail: String

    private init(_ code: Code, _ detail: String) {
        self.code_ = code
        self.detail = detail
    }

    /// The stable machine-readable code, e.g. `bad-port`.
    public var code: String { code_.rawValue }

    /// `code: detail`.
    public var description: String { "\(code): \(detail)" }

    /// Text that is no absolute `scheme://authority` URL, or a reference that cannot be resolved.
    public static func malformed(_ detail: String) -> ClientURLError { ClientURLError(.malformed, detail) }
    /// A scheme other than `http` or `https`.
    public static func unsupportedScheme(_ scheme: String) -> ClientURLError {
        ClientURLError(.unsupportedScheme, "scheme '\(scheme)' is neither http nor https")
    }
    /// `user:password@host`: refused because two readers can disagree on which host it names,
    /// and because credentials belong in headers the client controls, not in URLs that get logged.
    public static let userinfo = ClientURLError(.userinfo, "userinfo (user@host) in URL")
    /// `http:///path` and the like.
    public static let missingHost = ClientURLError(.missingHost, "URL has no host")
    /// A host the normaliser refuses (raw IDN, non-canonical IPv4, bad IPv6, bad labels).
    public static func badHost(_ detail: String) -> ClientURLError { ClientURLError(.badHost, detail) }
    /// A port that is empty, zero, over 65535, has leading zeros or is not decimal.
    public static func badPort(_ text: String) -> ClientURLError { ClientURLError(.badPort, "bad port '\(text)'") }
    /// Space, a control byte or DEL anywhere in the URL.
    public static let controlCharacter = ClientURLError(.controlCharacter, "space or control character in URL")
}
