#if canImport(Glibc)
import Glibc
#endif

/// One `Proxy-Authenticate: Digest …` challenge the client can answer (RFC 7616).
struct DigestChallenge {
    let realm: String
    let nonce: String
    let opaque: String?
    let algorithm: Hashes.Algorithm
    /// The challenge offered `qop=auth`; without it the RFC 2069 response is computed.
    let qopAuth: Bool

    /// The first Digest challenge among `values` with an algorithm this client speaks
    /// (MD5 or SHA-256; no `-sess`), in the order the proxy sent them.
    static func first(in values: [String]) -> DigestChallenge? {
        for value in values {
            guard value.count > 7, value.prefix(7).lowercased() == "digest " else { continue }
            let params = authParams(value.dropFirst(7))
            let algorithm: Hashes.Algorithm
            switch params["algorithm"]?.uppercased() {
            case nil, "MD5": algorithm = .md5
            case "SHA-256": algorithm = .sha256
            default: continue
            }
            guard let realm = params["realm"], let nonce = params["nonce"] else { continue }
            let qops = params["qop"]?.split(separator: ",").map { $0.trimmingSpaces().lowercased() }
            if let qops, !qops.contains("auth") { continue }
            return DigestChallenge(realm: realm, nonce: nonce, opaque: params["opaque"], algorithm: algorithm,
                                   qopAuth: qops != nil)
        }
        return nil
    }

    /// `key=token` and `key="quoted \" string"` pairs separated by commas; keys lowercased.
    static func authParams(_ text: Substring) -> [String: String] {
        var params: [String: String] = [:]
        var rest = text[...]
        while true {
            while let c = rest.first, c == " " || c == "\t" || c == "," { rest.removeFirst() }
            guard let equals = rest.firstIndex(of: "=") else { break }
            let key = rest[..<equals].trimmingSpaces().lowercased()
            rest = rest[rest.index(after: equals)...]
            while let c = rest.first, c == " " || c == "\t" { rest.removeFirst() }
            var value = ""
            if rest.first == "\"" {
                rest.removeFirst()
                while let c = rest.first {
                    rest.removeFirst()
                    if c == "\"" { break }
                    if c == "\\", let escaped = rest.first { value.append(escaped); rest.removeFirst() } else { value.append(c) }
                }
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<end].trimmingSpaces()
                rest = rest[end...]
            }
            params[key] = value
        }
        return params
    }
}

/// Builds Digest `Proxy-Authorization` values for one client thread. Everything a request
/// does not change is computed once per challenge and URI (HA1, HA2, the header up to `nc`),
/// as a C client such as curl effectively does: the bench measures the proxy, so the client's
/// share of these two cores should be what a real client costs, not string formatting. Per
/// request only the nonce count, a fresh cnonce and the response hash are made.
struct DigestResponder {
    let user: String
    let password: String
    let hashes: Hashes
    private var prepared: Prepared?
    private var cnonces = CnonceSource()

    /// What one (challenge, uri) pair fixes.
    private struct Prepared {
        let nonce: String
        let realm: String
        let uri: String
        let algorithm: Hashes.Algorithm
        /// `hex(HA1) ":" nonce ":"`, the response input's fixed head.
        let responseHead: [UInt8]
        /// `":auth:" hex(HA2)`, its fixed tail (qop=auth).
        let responseTail: [UInt8]
        /// The header value up to and including `nc=`.
        let headerHead: String
        let opaqueTail: String
    }

    init(user: String, password: String, hashes: Hashes) {
        self.user = user
        self.password = password
        self.hashes = hashes
    }

    mutating func authorization(for challenge: DigestChallenge, uri: String, nonceCount: Int) -> String {
        let algorithm = challenge.algorithm
        if challenge.qopAuth, let p = prepared, p.nonce == challenge.nonce, p.uri == uri, p.realm == challenge.realm,
           p.algorithm == algorithm {
            return respond(p, nonceCount: nonceCount)
        }
        let ha1 = hashes.hex(algorithm, "\(user):\(challenge.realm):\(password)")
        let ha2 = hashes.hex(algorithm, "CONNECT:\(uri)")
        let algorithmName = algorithm == .md5 ? "MD5" : "SHA-256"
        let head = "Digest username=\"\(user)\", realm=\"\(challenge.realm)\", nonce=\"\(challenge.nonce)\", uri=\"\(uri)\", algorithm=\(algorithmName)"
        let opaqueTail = challenge.opaque.map { ", opaque=\"\($0)\"" } ?? ""
        guard challenge.qopAuth else {
            return head + ", response=\"\(hashes.hex(algorithm, "\(ha1):\(challenge.nonce):\(ha2)"))\"" + opaqueTail
        }
        let p = Prepared(nonce: challenge.nonce, realm: challenge.realm, uri: uri, algorithm: algorithm,
                         responseHead: Array("\(ha1):\(challenge.nonce):".utf8), responseTail: Array(":auth:\(ha2)".utf8),
                         headerHead: head + ", qop=auth, nc=", opaqueTail: opaqueTail)
        prepared = p
        return respond(p, nonceCount: nonceCount)
    }

    private mutating func respond(_ p: Prepared, nonceCount: Int) -> String {
        var nc = [UInt8](repeating: UInt8(ascii: "0"), count: 8)
        var rest = UInt32(truncatingIfNeeded: nonceCount)
        for index in stride(from: 7, through: 0, by: -1) {
            nc[index] = hexDigits[Int(rest & 0xF)]
            rest >>= 4
        }
        let cnonce = cnonces.next()
        var input = p.responseHead
        input.reserveCapacity(input.count + 8 + 1 + cnonce.count + p.responseTail.count)
        input += nc
        input.append(UInt8(ascii: ":"))
        input += cnonce
        input += p.responseTail
        let response = hashes.digest(p.algorithm, input).hexString
        return p.headerHead + String(decoding: nc, as: UTF8.self) + ", cnonce=\"" + String(decoding: cnonce, as: UTF8.self)
            + "\", response=\"" + response + "\"" + p.opaqueTail
    }
}

private let hexDigits = Array("0123456789abcdef".utf8)

/// 16-hex-digit client nonces from a generator seeded once from the system's: unique and
/// unguessable enough for a benchmark, without two getrandom(2) calls per request.
private struct CnonceSource {
    private var state: UInt64

    init() {
        var system = SystemRandomNumberGenerator()
        state = system.next()
    }

    /// SplitMix64, hex-encoded.
    mutating func next() -> [UInt8] {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        var out = [UInt8](repeating: 0, count: 16)
        for index in 0..<16 {
            out[index] = hexDigits[Int((z >> UInt64(60 - 4 * index)) & 0xF)]
        }
        return out
    }
}

/// `count` random bytes, eight per getrandom(2) call.
func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count + 7)
    while bytes.count < count {
        withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
    }
    return Array(bytes.prefix(count))
}
