/// Digest answers for one nonce (RFC 7616 §3.4): the nonce-count rises with each request
/// signed under it, each with a fresh client nonce.
struct DigestClientAnswer: Sendable {
    let challenge: DigestClientChallenge
    /// The count of the last answer sent under this nonce; 0 before the first.
    private(set) var nonceCount: UInt32 = 0

    init(challenge: DigestClientChallenge) {
        self.challenge = challenge
    }

    /// The next `Authorization`/`Proxy-Authorization` value for `method` and `target` (the
    /// request-target exactly as on the request line). Nil once the count would wrap.
    mutating func next(user: String, password: String, method: String, target: String,
                       cnonce: String) throws(ClientAuthError) -> String? {
        guard nonceCount < UInt32.max else { return nil }
        guard !user.isEmpty, !AuthSyntax.containsControl(user) else { throw .badCredentials("user") }
        guard !AuthSyntax.containsControl(target), !target.isEmpty else { throw .badCredentials("target") }
        nonceCount += 1
        let algorithm = challenge.algorithm
        let nc = Self.hex8(nonceCount)

        var ha1 = AuthHex.encode(algorithm.ha1(user: user, realm: challenge.realm, password: password))
        if challenge.session {
            ha1 = algorithm.hexHash("\(ha1):\(challenge.nonce):\(cnonce)")
        }
        let ha2 = algorithm.hexHash("\(method):\(target)")
        let response = algorithm.hexHash("\(ha1):\(challenge.nonce):\(nc):\(cnonce):auth:\(ha2)")

        var value = "Digest "
        if challenge.userhash {
            value += "username=\"\(algorithm.userhash(user: user, realm: challenge.realm))\""
        } else if user.utf8.allSatisfy({ $0 < 0x80 }) {
            value += "username=\(DigestChallenge.quoted(user))"
        } else {
            // RFC 7616 §3.4.4: a name a quoted-string cannot carry portably goes as an
            // RFC 8187 ext-value.
            value += "username*=UTF-8''\(Self.percentEncoded(user))"
        }
        value += ", realm=\(DigestChallenge.quoted(challenge.realm)), uri=\(DigestChallenge.quoted(target))"
        value += ", algorithm=\(challenge.algorithmToken), nonce=\(DigestChallenge.quoted(challenge.nonce))"
        value += ", nc=\(nc), cnonce=\"\(cnonce)\", qop=auth, response=\"\(response)\""
        if let opaque = challenge.opaque { value += ", opaque=\(DigestChallenge.quoted(opaque))" }
        if challenge.userhash { value += ", userhash=true" }
        return value
    }

    private static func hex8(_ count: UInt32) -> String {
        let digits = String(count, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

    /// RFC 8187 attr-char kept, every other byte as `%XX`.
    private static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let isAttrChar = HTTPBytes.isTokenChar(byte) && byte != UInt8(ascii: "*")
                && byte != UInt8(ascii: "'") && byte != UInt8(ascii: "%")
            if isAttrChar {
                out.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                let hex = AuthHex.encode([byte]).uppercased()
                out += "%\(hex)"
            }
        }
        return out
    }
}
