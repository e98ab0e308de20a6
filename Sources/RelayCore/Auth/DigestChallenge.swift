/// One `Proxy-Authenticate: Digest …` challenge (RFC 7616 §3.3).
public struct DigestChallenge: Sendable, Equatable {
    /// The protection space.
    public let realm: String
    /// A nonce from `DigestNonceTable`.
    public let nonce: String
    /// Returned unchanged by the client.
    public let opaque: String
    /// The algorithm this challenge asks for.
    public let algorithm: DigestAlgorithm
    /// True when the previous request failed only because its nonce was stale.
    public let stale: Bool
    /// True when the client may send `H(user:realm)` instead of the user name.
    public let userhash: Bool

    /// The field value: `Digest realm="…", qop="auth", algorithm=…, nonce="…",
    /// opaque="…", charset=UTF-8, userhash=…[, stale=true]`.
    public var headerValue: String {
        var value = "Digest realm=\(Self.quoted(realm)), qop=\"auth\", algorithm=\(algorithm.rawValue)"
        value += ", nonce=\(Self.quoted(nonce)), opaque=\(Self.quoted(opaque)), charset=UTF-8"
        value += ", userhash=\(userhash ? "true" : "false")"
        if stale { value += ", stale=true" }
        return value
    }

    /// A quoted-string with `"` and `\` escaped (RFC 9110 §5.6.4).
    static func quoted(_ text: String) -> String {
        var out = "\""
        for character in text {
            if character == "\"" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        out.append("\"")
        return out
    }
}
