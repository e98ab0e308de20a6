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
/// does not change is computed once per challenge and URI (HA1, HA2, the request up to
/// `nc`), as a C client such as curl effectively does: the bench measures the proxy, so the
/// client's share of these two cores should be what a real client costs, not string
/// formatting. A request on a kept nonce is written into one reused buffer: the count, a
/// fresh cnonce and the response hash (through a reused OpenSSL context), nothing else; it
/// cost about 10 µs of the shared cores per tunnel as strings and arrays.
struct DigestResponder {
    let user: String
    let password: String
    let hashes: Hashes
    private var prepared: Prepared?
    private var cnonces = CnonceSource()
    private let context = Hashes.Context()
    /// The request being written, and the response hash's input: kept between requests.
    private var request: [UInt8] = []
    private var hashInput: [UInt8] = []

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
        /// The whole CONNECT request up to the `nc` value, and what follows the response.
        let requestHead: [UInt8]
        let requestTail: [UInt8]
    }

    init(user: String, password: String, hashes: Hashes) {
        self.user = user
        self.password = password
        self.hashes = hashes
    }

    mutating func authorization(for challenge: DigestChallenge, uri: String, nonceCount: Int) -> String {
        guard challenge.qopAuth, let p = prepare(challenge, uri: uri) else {
            let algorithm = challenge.algorithm
            let ha1 = hashes.hex(algorithm, "\(user):\(challenge.realm):\(password)")
            let ha2 = hashes.hex(algorithm, "CONNECT:\(uri)")
            return Self.head(user: user, challenge: challenge, uri: uri)
                + ", response=\"\(hashes.hex(algorithm, "\(ha1):\(challenge.nonce):\(ha2)"))\""
                + (challenge.opaque.map { ", opaque=\"\($0)\"" } ?? "")
        }
        writeRequest(p, nonceCount: nonceCount)
        // The header value: after the request line, Host and field name; before the CRLFs.
        let start = p.requestHead.count - p.headerHead.utf8.count
        return String(decoding: request[start..<request.count - 4], as: UTF8.self)
    }

    /// The whole CONNECT request with a Digest answer to `challenge` (qop=auth), for the
    /// next count on its nonce, handed to `body` from the reused buffer.
    mutating func withRequest<Result>(for challenge: DigestChallenge, uri: String, nonceCount: Int,
                                      _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result? {
        guard challenge.qopAuth, let p = prepare(challenge, uri: uri) else { return nil }
        writeRequest(p, nonceCount: nonceCount)
        return try request.withUnsafeBytes(body)
    }

    private static func head(user: String, challenge: DigestChallenge, uri: String) -> String {
        let algorithmName = challenge.algorithm == .md5 ? "MD5" : "SHA-256"
        return "Digest username=\"\(user)\", realm=\"\(challenge.realm)\", nonce=\"\(challenge.nonce)\", uri=\"\(uri)\", algorithm=\(algorithmName)"
    }

    private mutating func prepare(_ challenge: DigestChallenge, uri: String) -> Prepared? {
        let algorithm = challenge.algorithm
        if let p = prepared, p.nonce == challenge.nonce, p.uri == uri, p.realm == challenge.realm, p.algorithm == algorithm {
            return p
        }
        let ha1 = hashes.hex(algorithm, "\(user):\(challenge.realm):\(password)")
        let ha2 = hashes.hex(algorithm, "CONNECT:\(uri)")
        let headerHead = Self.head(user: user, challenge: challenge, uri: uri) + ", qop=auth, nc="
        let opaqueTail = challenge.opaque.map { ", opaque=\"\($0)\"" } ?? ""
        let p = Prepared(nonce: challenge.nonce, realm: challenge.realm, uri: uri, algorithm: algorithm,
                         responseHead: Array("\(ha1):\(challenge.nonce):".utf8), responseTail: Array(":auth:\(ha2)".utf8),
                         headerHead: headerHead, opaqueTail: opaqueTail,
                         requestHead: Array("CONNECT \(uri) HTTP/1.1\r\nHost: \(uri)\r\nProxy-Authorization: \(headerHead)".utf8),
                         requestTail: Array("\"\(opaqueTail)\r\n\r\n".utf8))
        prepared = p
        return p
    }

    /// `requestHead` nc `, cnonce="` cnonce `", response="` hex(H(responseHead nc ":" cnonce
    /// responseTail)) `requestTail`, into `request`.
    private mutating func writeRequest(_ p: Prepared, nonceCount: Int) {
        var nc = (UInt64(0), UInt64(0))   // room for 8 digits
        let cnonce = cnonces.next()
        withUnsafeMutableBytes(of: &nc) { digits in
            var rest = UInt32(truncatingIfNeeded: nonceCount)
            for index in stride(from: 7, through: 0, by: -1) {
                digits[index] = hexDigits[Int(rest & 0xF)]
                rest >>= 4
            }
        }
        withUnsafeBytes(of: nc) { ncBytes in
            let ncDigits = UnsafeRawBufferPointer(rebasing: ncBytes[0..<8])
            withUnsafeBytes(of: cnonce) { cnonceDigits in
                hashInput.removeAll(keepingCapacity: true)
                hashInput += p.responseHead
                hashInput += ncDigits
                hashInput.append(UInt8(ascii: ":"))
                hashInput += cnonceDigits
                hashInput += p.responseTail

                request.removeAll(keepingCapacity: true)
                request += p.requestHead
                request += ncDigits
                request += cnonceOpen
                request += cnonceDigits
                request += responseOpen
            }
        }
        var digest = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        let length = withUnsafeMutableBytes(of: &digest) { out in
            hashInput.withUnsafeBytes { hashes.digest(p.algorithm, $0, into: out, context: context) }
        }
        withUnsafeBytes(of: digest) { raw in
            for byte in raw[0..<length] {
                request.append(hexDigits[Int(byte >> 4)])
                request.append(hexDigits[Int(byte & 0xF)])
            }
        }
        request += p.requestTail
    }
}

private let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
private let cnonceOpen: [UInt8] = Array(", cnonce=\"".utf8)
private let responseOpen: [UInt8] = Array("\", response=\"".utf8)

/// 16-hex-digit client nonces from a generator seeded once from the system's: unique and
/// unguessable enough for a benchmark, without two getrandom(2) calls per request.
private struct CnonceSource {
    private var state: UInt64

    init() {
        var system = SystemRandomNumberGenerator()
        state = system.next()
    }

    /// SplitMix64, as 16 hex digits in two words (no array per request).
    mutating func next() -> (UInt64, UInt64) {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        var out = (UInt64(0), UInt64(0))
        withUnsafeMutableBytes(of: &out) { digits in
            for index in 0..<16 {
                digits[index] = hexDigits[Int((z >> UInt64(60 - 4 * index)) & 0xF)]
            }
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
