import FuzzSupport
import RelayCore

/// Answers a fresh challenge with the fuzzed credentials' own fields (user, uri, cnonce,
/// nc, qop, algorithm), the response computed here from RFC 7616 alone: the authenticator
/// must accept it, under any quoting the fields need, and refuse it the second time.
enum DigestAnswer {
    static let realm = "corp.example"
    static let password = "Circle Of Life"

    static func check(_ fuzzed: DigestCredentials) {
        guard !fuzzed.userhash else { return }
        let authenticator = DigestAuthenticator(configuration: .init(realm: realm, serverKey: [UInt8](repeating: 7, count: 32),
                                                                     trackedNonces: 4))
        guard let challenge = authenticator.challenges(now: 1).first(where: { $0.algorithm == fuzzed.algorithm }) else {
            return invariant(false, "no challenge for \(fuzzed.algorithm)")
        }
        let algorithm = fuzzed.algorithm
        let ha1 = algorithm.ha1(user: fuzzed.username, realm: realm, password: password)
        let ha2 = algorithm.hexHash("GET:\(fuzzed.uri)")
        let response = algorithm.hexHash("\(AuthHex.encode(ha1)):\(challenge.nonce):\(fuzzed.nonceCountText):\(fuzzed.cnonce):\(fuzzed.qop):\(ha2)")
        let fields: [AuthParamWire.Field] = [
            ("username", fuzzed.username, true), ("realm", realm, true), ("nonce", challenge.nonce, true),
            ("uri", fuzzed.uri, true), ("algorithm", algorithm.rawValue, false), ("qop", fuzzed.qop, false),
            ("nc", fuzzed.nonceCountText, false), ("cnonce", fuzzed.cnonce, true), ("response", response, true),
            ("opaque", challenge.opaque, true),
        ]
        let value = "Digest " + String(decoding: AuthParamWire.spell(fields), as: UTF8.self)
        guard let answer = try? ProxyAuthorization(parsing: value) else {
            return invariant(false, "the answer does not parse: \(value)")
        }
        let lookup: DigestAuthenticator.HA1Lookup = { user, _, requested in
            user == fuzzed.username ? requested.ha1(user: user, realm: realm, password: password) : nil
        }
        let first = authenticator.verify(answer, method: "GET", requestTarget: fuzzed.uri, now: 2, ha1: lookup)
        invariant(first == .ok(user: fuzzed.username), "a correct answer for \(fuzzed.username) gave \(first): \(value)")
        let replay = authenticator.verify(answer, method: "GET", requestTarget: fuzzed.uri, now: 3, ha1: lookup)
        invariant(replay == .failed(reason: .replayedNonce), "the same nonce count again gave \(replay)")
    }
}
