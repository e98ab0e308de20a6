/// A `Digest` challenge as the client reads it (RFC 7616 §3.3): what it must echo and
/// hash, bounded and checked before any of it is used.
///
/// Only `qop=auth` is answered (integrity protection of bodies, `auth-int`, is not); a
/// challenge that does not offer it, names an algorithm other than MD5 or SHA-256 (with or
/// without `-sess`), or lacks a nonce is refused as `bad-challenge` naming the parameter.
struct DigestClientChallenge: Sendable, Equatable {
    /// Longest realm, nonce or opaque accepted, in bytes.
    static let maxFieldLength = 1024

    let realm: String
    let nonce: String
    let opaque: String?
    let algorithm: DigestAlgorithm
    /// `-sess`: HA1 folds in the nonce and cnonce (RFC 7616 §3.4.2).
    let session: Bool
    /// The server accepts `H(user:realm)` in place of the user name.
    let userhash: Bool
    /// The previous answer was right but its nonce had expired.
    let stale: Bool

    /// The algorithm token as the answer names it.
    var algorithmToken: String { algorithm.rawValue + (session ? "-sess" : "") }

    /// Higher is stronger: SHA-256 before MD5, and the plain form before `-sess`.
    var strength: Int { (algorithm == .sha256 ? 2 : 0) + (session ? 0 : 1) }

    init(_ challenge: AuthChallenge) throws(ClientAuthError) {
        guard challenge.hasScheme("Digest"), let parameters = challenge.parameters else {
            throw .badChallenge("Digest")
        }
        func field(_ name: String, required: Bool) throws(ClientAuthError) -> String? {
            guard let value = parameters[name] else {
                if required { throw .badChallenge(name) }
                return nil
            }
            guard value.utf8.count <= Self.maxFieldLength, !AuthSyntax.containsControl(value) else {
                throw .badChallenge(name)
            }
            return value
        }
        realm = try field("realm", required: true)!
        let nonce = try field("nonce", required: true)!
        guard !nonce.isEmpty else { throw .badChallenge("nonce") }
        self.nonce = nonce
        opaque = try field("opaque", required: false)

        let named: (DigestAlgorithm, Bool) = switch parameters["algorithm"].map(AuthSyntax.asciiLowercased) {
        case nil, "md5"?: (.md5, false)
        case "md5-sess"?: (.md5, true)
        case "sha-256"?: (.sha256, false)
        case "sha-256-sess"?: (.sha256, true)
        default: throw .badChallenge("algorithm")
        }
        algorithm = named.0
        session = named.1

        // qop is a quoted, comma-separated list of tokens.
        guard let qop = parameters["qop"],
              qop.split(separator: ",").contains(where: {
                  AuthSyntax.asciiLowercased($0.trimmingASCIIWhitespace()) == "auth"
              })
        else { throw .badChallenge("qop") }

        userhash = try Self.flag(parameters["userhash"], name: "userhash")
        stale = try Self.flag(parameters["stale"], name: "stale")
    }

    private static func flag(_ value: String?, name: String) throws(ClientAuthError) -> Bool {
        switch value.map(AuthSyntax.asciiLowercased) {
        case nil, "false"?: false
        case "true"?: true
        default: throw .badChallenge(name)
        }
    }
}

extension Substring {
    /// Without leading and trailing SP and HTAB.
    func trimmingASCIIWhitespace() -> String {
        let bytes = Array(utf8)
        var start = 0
        var end = bytes.count
        while start < end, AuthSyntax.isWhitespace(bytes[start]) { start += 1 }
        while end > start, AuthSyntax.isWhitespace(bytes[end - 1]) { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
