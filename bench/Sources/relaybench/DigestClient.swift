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

/// Builds Digest `Proxy-Authorization` values for one client thread, caching HA1 per realm
/// and algorithm (it depends only on the password) and, in nonce-reuse mode, the last
/// challenge with its nonce count.
struct DigestResponder {
    let user: String
    let password: String
    let hashes: Hashes
    private var ha1Cache: [String: String] = [:]

    init(user: String, password: String, hashes: Hashes) {
        self.user = user
        self.password = password
        self.hashes = hashes
    }

    mutating func authorization(for challenge: DigestChallenge, uri: String, nonceCount: Int) -> String {
        let algorithm = challenge.algorithm
        let cacheKey = "\(algorithm)|\(challenge.realm)"
        let ha1: String
        if let cached = ha1Cache[cacheKey] {
            ha1 = cached
        } else {
            ha1 = hashes.hex(algorithm, "\(user):\(challenge.realm):\(password)")
            ha1Cache[cacheKey] = ha1
        }
        let ha2 = hashes.hex(algorithm, "CONNECT:\(uri)")
        let algorithmName = algorithm == .md5 ? "MD5" : "SHA-256"
        var value = "Digest username=\"\(user)\", realm=\"\(challenge.realm)\", nonce=\"\(challenge.nonce)\", uri=\"\(uri)\", algorithm=\(algorithmName)"
        if challenge.qopAuth {
            let nc = String(nonceCount, radix: 16)
            let ncText = String(repeating: "0", count: max(0, 8 - nc.count)) + nc
            let cnonce = randomHex(16)
            let response = hashes.hex(algorithm, "\(ha1):\(challenge.nonce):\(ncText):\(cnonce):auth:\(ha2)")
            value += ", qop=auth, nc=\(ncText), cnonce=\"\(cnonce)\", response=\"\(response)\""
        } else {
            value += ", response=\"\(hashes.hex(algorithm, "\(ha1):\(challenge.nonce):\(ha2)"))\""
        }
        if let opaque = challenge.opaque { value += ", opaque=\"\(opaque)\"" }
        return value
    }
}

func randomHex(_ count: Int) -> String {
    randomBytes(count).hexString
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
