/// Why a piece of authentication input was refused before any credential was checked:
/// malformed headers, bad base64, out-of-range NTLM fields and the like.
///
/// `code` is a stable, machine-readable word for logs and tests; every such error is a
/// `bad-request` failure for the audit trail (`failureReason`). `parameter` names the
/// offending auth-param or NTLM field when there is one. Neither ever carries credential
/// material, so an `AuthError` is always safe to log.
public struct AuthError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: String, Sendable {
        case badBase64 = "bad-base64"
        case tooLarge = "too-large"
        case malformedHeader = "malformed-header"
        case wrongScheme = "wrong-scheme"
        case duplicateParameter = "duplicate-parameter"
        case missingParameter = "missing-parameter"
        case badParameter = "bad-parameter"
        case tooManyParameters = "too-many-parameters"
        case badCredentials = "bad-credentials"
        case badUTF8 = "bad-utf8"
        case controlCharacter = "control-character"
        case truncated = "truncated"
        case badSignature = "bad-signature"
        case badMessageType = "bad-message-type"
        case badField = "bad-field"
    }

    private let code_: Code
    /// The auth-param or message field at fault, when there is one (never its value).
    public let parameter: String?

    private init(_ code: Code, parameter: String? = nil) {
        self.code_ = code
        self.parameter = parameter
    }

    /// The stable machine-readable code, e.g. `bad-base64`.
    public var code: String { code_.rawValue }

    /// What the audit trail records for this error: always `bad-request`.
    public var failureReason: AuthFailureReason { .badRequest }

    /// `code`, with the parameter name when there is one.
    public var description: String {
        parameter.map { "\(code): \($0)" } ?? code
    }

    /// Base64 with characters outside the alphabet, bad padding or a bad length.
    public static let badBase64 = AuthError(.badBase64)
    /// Input over the size bound for its kind.
    public static let tooLarge = AuthError(.tooLarge)
    /// A header value that does not follow the credentials grammar (RFC 9110 §11).
    public static let malformedHeader = AuthError(.malformedHeader)
    /// Credentials for another scheme than the one being decoded.
    public static let wrongScheme = AuthError(.wrongScheme)
    /// More auth-params than the bound allows.
    public static let tooManyParameters = AuthError(.tooManyParameters)
    /// Basic credentials without a `:` between user and password.
    public static let badCredentials = AuthError(.badCredentials)
    /// Text that is not valid UTF-8 (or UTF-16 for NTLM).
    public static let badUTF8 = AuthError(.badUTF8)
    /// Text containing control characters.
    public static let controlCharacter = AuthError(.controlCharacter)
    /// A binary message shorter than its fixed header.
    public static let truncated = AuthError(.truncated)
    /// An NTLM message without the `NTLMSSP\0` signature.
    public static let badSignature = AuthError(.badSignature)
    /// An NTLM message of another type than expected.
    public static let badMessageType = AuthError(.badMessageType)

    /// The same auth-param given twice.
    public static func duplicateParameter(_ name: String) -> AuthError { AuthError(.duplicateParameter, parameter: name) }
    /// A required auth-param that is absent.
    public static func missingParameter(_ name: String) -> AuthError { AuthError(.missingParameter, parameter: name) }
    /// An auth-param whose value is malformed, too long or not allowed.
    public static func badParameter(_ name: String) -> AuthError { AuthError(.badParameter, parameter: name) }
    /// An NTLM field whose offset or length falls outside the message, into its header,
    /// or past its bound.
    public static func badField(_ name: String) -> AuthError { AuthError(.badField, parameter: name) }
}
