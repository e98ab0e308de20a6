/// A parsed `Proxy-Authorization` (or `Authorization`) field value:
/// `credentials = auth-scheme [ 1*SP ( token68 / #auth-param ) ]` (RFC 9110 §11.4).
///
/// The value is bounded before any work is done. Scheme names compare case-insensitively
/// (`hasScheme`); what follows the scheme is kept as a token68 (Basic, NTLM, Negotiate) or
/// as parsed auth-params (Digest), whichever the grammar says it is.
public struct ProxyAuthorization: Sendable, Equatable {
    /// Longest field value accepted, in bytes.
    public static let defaultMaxLength = 16 * 1024
    /// Most auth-params accepted in one value.
    public static let defaultMaxParameters = 32

    /// What follows the scheme.
    public enum Credentials: Sendable, Equatable {
        /// Nothing: the scheme alone.
        case none
        /// A token68 such as base64 (Basic, NTLM, Negotiate).
        case token68(String)
        /// An auth-param list (Digest).
        case parameters(AuthParameters)
    }

    /// The scheme exactly as sent; compare with `hasScheme`.
    public let scheme: String
    /// What follows the scheme.
    public let credentials: Credentials

    /// Parses a field value, refusing values longer than `maxLength` bytes, with more than
    /// `maxParameters` auth-params, or that do not follow the grammar.
    public init(parsing value: String,
                maxLength: Int = ProxyAuthorization.defaultMaxLength,
                maxParameters: Int = ProxyAuthorization.defaultMaxParameters) throws(AuthError) {
        guard value.utf8.count <= maxLength else { throw .tooLarge }
        let bytes = Array(value.utf8)
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, AuthSyntax.isWhitespace(bytes[start]) { start += 1 }
        while end > start, AuthSyntax.isWhitespace(bytes[end - 1]) { end -= 1 }

        var index = start
        while index < end, HTTPBytes.isTokenChar(bytes[index]) { index += 1 }
        guard index > start else { throw .malformedHeader }
        scheme = String(decoding: bytes[start..<index], as: UTF8.self)
        if index == end {
            credentials = .none
            return
        }
        guard bytes[index] == 0x20 else { throw .malformedHeader }
        while index < end, bytes[index] == 0x20 { index += 1 }
        let rest = bytes[index..<end]
        if AuthSyntax.isToken68(rest) {
            credentials = .token68(String(decoding: rest, as: UTF8.self))
        } else {
            credentials = .parameters(try AuthParameters(parsing: rest, maxCount: maxParameters))
        }
    }

    /// True when the scheme is `name`, ignoring ASCII case.
    public func hasScheme(_ name: String) -> Bool {
        HTTPBytes.equalsIgnoringASCIICase(scheme, name)
    }

    /// The token68, when the credentials are one.
    public var token68: String? {
        if case .token68(let token) = credentials { return token }
        return nil
    }

    /// The auth-params, when the credentials are a list.
    public var parameters: AuthParameters? {
        if case .parameters(let list) = credentials { return list }
        return nil
    }
}
