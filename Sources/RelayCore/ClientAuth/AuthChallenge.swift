/// One challenge from a `Proxy-Authenticate` or `WWW-Authenticate` field (RFC 9110 §11.6.1):
/// `auth-scheme [ 1*SP ( token68 / #auth-param ) ]`.
///
/// A field may carry several challenges, and challenges, their parameters and quoted
/// strings all use commas, so `parse(headerValues:)` splits a value where a new scheme
/// starts, not at every comma. The parameter list is checked by the server's own
/// `AuthParameters` grammar (names case-insensitive, no duplicates, bounded).
public struct AuthChallenge: Sendable, Equatable {
    /// Longest field value read, in bytes: a NTLM CHALLENGE with a large target info stays
    /// well under it; anything longer is a hostile or broken peer.
    public static let maxValueLength = 16 * 1024
    /// Most challenges read from all values together.
    public static let maxChallenges = 32
    /// Most auth-params in one challenge.
    public static let maxParameters = 32

    /// The scheme exactly as sent; compare with `hasScheme`.
    public let scheme: String
    /// The auth-params, when the challenge carries a list (Digest, Basic's realm).
    public let parameters: AuthParameters?
    /// The token68, when the challenge carries one (a NTLM CHALLENGE, a Negotiate reply).
    public let token68: String?

    /// A challenge made of its parts, as a test or another parser has them.
    public init(scheme: String, parameters: AuthParameters? = nil, token68: String? = nil) {
        self.scheme = scheme
        self.parameters = parameters
        self.token68 = token68
    }

    /// True when the scheme is `name`, ignoring ASCII case.
    public func hasScheme(_ name: String) -> Bool {
        HTTPBytes.equalsIgnoringASCIICase(scheme, name)
    }

    /// The value of parameter `name` (case-insensitive), if present.
    public subscript(name: String) -> String? {
        parameters?[name]
    }

    /// Every challenge in `headerValues` (one entry per field line), in order. Empty list
    /// elements are skipped as RFC 9110 §5.6.1 asks; anything else off the grammar, or past
    /// the bounds, is `bad-challenge` rather than a guess.
    public static func parse(headerValues: [String]) throws(ClientAuthError) -> [AuthChallenge] {
        var challenges: [AuthChallenge] = []
        for value in headerValues {
            guard value.utf8.count <= maxValueLength else { throw .badChallenge("length") }
            var scanner = ChallengeScanner(Array(value.utf8))
            while let challenge = try scanner.next() {
                guard challenges.count < maxChallenges else { throw .badChallenge("count") }
                challenges.append(challenge)
            }
        }
        return challenges
    }
}

/// Walks one field value challenge by challenge.
private struct ChallengeScanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func next() throws(ClientAuthError) -> AuthChallenge? {
        skip { $0 == UInt8(ascii: ",") || AuthSyntax.isWhitespace($0) }
        guard index < bytes.count else { return nil }
        let schemeStart = index
        skip(HTTPBytes.isTokenChar)
        guard index > schemeStart else { throw .badChallenge("scheme") }
        let scheme = String(decoding: bytes[schemeStart..<index], as: UTF8.self)
        let afterScheme = index
        skip(AuthSyntax.isWhitespace)
        if index == bytes.count || bytes[index] == UInt8(ascii: ",") {
            return AuthChallenge(scheme: scheme)
        }
        guard afterScheme < index, bytes[afterScheme] == 0x20 else { throw .badChallenge("scheme") }

        if let token = token68() { return AuthChallenge(scheme: scheme, token68: token) }
        let listStart = index
        let listEnd = try parameterListEnd()
        do throws(AuthError) {
            let parameters = try AuthParameters(parsing: bytes[listStart..<listEnd], maxCount: AuthChallenge.maxParameters)
            return AuthChallenge(scheme: scheme, parameters: parameters)
        } catch {
            throw .badChallenge(error.parameter ?? "parameters")
        }
    }

    /// The token68 at `index` when one stands alone there (up to the end or a comma),
    /// moving past it; otherwise nil with `index` unmoved.
    private mutating func token68() -> String? {
        var end = index
        while end < bytes.count, AuthSyntax.isToken68Char(bytes[end]) { end += 1 }
        guard end > index else { return nil }
        while end < bytes.count, bytes[end] == UInt8(ascii: "=") { end += 1 }
        var after = end
        while after < bytes.count, AuthSyntax.isWhitespace(bytes[after]) { after += 1 }
        guard after == bytes.count || bytes[after] == UInt8(ascii: ",") else { return nil }
        let token = String(decoding: bytes[index..<end], as: UTF8.self)
        index = after
        return token
    }

    /// Moves past the auth-params of one challenge and returns where they end: before the
    /// comma that precedes the next scheme, or at the end of the value. The grammar of each
    /// parameter is left to `AuthParameters`; this finds only their extent, stepping over
    /// quoted strings whole so a comma inside one splits nothing.
    private mutating func parameterListEnd() throws(ClientAuthError) -> Int {
        while true {
            // One `name = value`.
            skip(HTTPBytes.isTokenChar)
            skip(AuthSyntax.isWhitespace)
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { throw .badChallenge("parameters") }
            index += 1
            skip(AuthSyntax.isWhitespace)
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                try skipQuotedString()
            } else {
                skip(HTTPBytes.isTokenChar)
            }
            skip(AuthSyntax.isWhitespace)
            let end = index
            guard index < bytes.count else { return end }
            guard bytes[index] == UInt8(ascii: ",") else { throw .badChallenge("parameters") }
            // After the comma(s): another parameter when a token is followed by `=`,
            // otherwise the next challenge's scheme.
            var probe = index
            while probe < bytes.count, bytes[probe] == UInt8(ascii: ",") || AuthSyntax.isWhitespace(bytes[probe]) {
                probe += 1
            }
            if probe == bytes.count {
                index = probe
                return end
            }
            var afterName = probe
            while afterName < bytes.count, HTTPBytes.isTokenChar(bytes[afterName]) { afterName += 1 }
            while afterName < bytes.count, AuthSyntax.isWhitespace(bytes[afterName]) { afterName += 1 }
            guard afterName < bytes.count, bytes[afterName] == UInt8(ascii: "=") else {
                index = probe
                return end
            }
            index = probe
        }
    }

    private mutating func skipQuotedString() throws(ClientAuthError) {
        index += 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                return
            case UInt8(ascii: "\\"):
                index += 2
            default:
                index += 1
            }
        }
        throw .badChallenge("parameters")
    }

    private mutating func skip(_ predicate: (UInt8) -> Bool) {
        while index < bytes.count, predicate(bytes[index]) { index += 1 }
    }
}
