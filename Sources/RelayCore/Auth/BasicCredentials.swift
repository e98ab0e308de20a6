/// Basic credentials (RFC 7617): `base64(user-id ":" password)`.
///
/// Both parts must be valid UTF-8 (the `charset="UTF-8"` this relay advertises) without
/// control characters; the user-id must not contain `:` (the first one separates it from
/// the password, which may contain more). The encoded form is bounded before decoding.
/// `description` never shows the password.
public struct BasicCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Longest decoded `user:password` accepted, in bytes.
    public static let defaultMaxDecodedLength = 1024

    /// The user-id.
    public let user: String
    /// The password. Feed `Array(password.utf8)` to the verifier's KDF.
    public let password: String

    /// Decodes the token68 of `Basic <token68>`.
    public init(token68: String, maxDecodedLength: Int = BasicCredentials.defaultMaxDecodedLength) throws(AuthError) {
        let decoded = try AuthCrypto.base64Decode(token68, maxDecodedCount: maxDecodedLength)
        guard let colon = decoded.firstIndex(of: UInt8(ascii: ":")) else { throw .badCredentials }
        guard let user = AuthSyntax.utf8String(decoded[..<colon]),
              let password = AuthSyntax.utf8String(decoded[(colon + 1)...])
        else { throw .badUTF8 }
        guard !user.isEmpty else { throw .badCredentials }
        guard !AuthSyntax.containsControl(user), !AuthSyntax.containsControl(password) else {
            throw .controlCharacter
        }
        self.user = user
        self.password = password
    }

    /// Decodes the credentials of a parsed `Basic` field value.
    public init(_ authorization: ProxyAuthorization,
                maxDecodedLength: Int = BasicCredentials.defaultMaxDecodedLength) throws(AuthError) {
        guard authorization.hasScheme("Basic") else { throw .wrongScheme }
        guard let token = authorization.token68 else { throw .malformedHeader }
        try self.init(token68: token, maxDecodedLength: maxDecodedLength)
    }

    /// The user only; the password is never rendered.
    public var description: String { "Basic(user: \(user), password: <redacted>)" }

    /// Same as `description`.
    public var debugDescription: String { description }
}
