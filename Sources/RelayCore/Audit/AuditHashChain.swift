import COpenSSL

/// Links audit rows: `hash = H(prev_hash_bytes ‖ canonical(row))`.
///
/// `H` is SHA-256, or HMAC-SHA-256 under an operator key so that someone who can write the
/// database but lacks the key cannot rebuild a consistent chain after editing a row.
/// `prev_hash_bytes` are the 32 raw bytes the previous row's hex `hash` spells (32 zero
/// bytes for the first row). All crypto is OpenSSL's; the algorithms are fetched once per
/// process because OpenSSL 3 fetches contend on a global lock.
public struct AuditHashChain: Sendable {
    /// `prev_hash` of the first row: 64 `0` characters.
    public static let genesis = String(repeating: "0", count: 64)

    private let keyedTemplate: HMACTemplate?

    /// `key == nil` chains with plain SHA-256; a non-empty key chains with HMAC-SHA-256.
    public init(key: [UInt8]? = nil) {
        if let key {
            precondition(!key.isEmpty, "an audit hash key must not be empty")
            keyedTemplate = HMACTemplate(key: key)
        } else {
            keyedTemplate = nil
        }
    }

    /// True when this chain is keyed (HMAC).
    public var isKeyed: Bool { keyedTemplate != nil }

    /// The lowercase hex hash of the row whose canonical bytes are `canonical`, following the
    /// row whose hash is `prevHashHex`. `prevHashHex` must be well formed
    /// (`isWellFormed(hashHex:)`): callers read it from their own previous output or check it.
    public func next(prevHashHex: String, canonical: [UInt8]) -> String {
        guard let prev = Self.decodeHex(prevHashHex) else {
            preconditionFailure("prev hash is not 64 hex characters: \(prevHashHex)")
        }
        var digest = [UInt8](repeating: 0, count: 32)
        if let keyedTemplate {
            keyedTemplate.mac(prev, canonical, into: &digest)
        } else {
            Algorithms.shared.sha256(prev, canonical, into: &digest)
        }
        return Self.encodeHex(digest)
    }

    /// True for exactly 64 lowercase or uppercase hex digits.
    public static func isWellFormed(hashHex: String) -> Bool {
        decodeHex(hashHex) != nil
    }

    private static func decodeHex(_ hex: String) -> [UInt8]? {
        var hex = hex
        return hex.withUTF8 { utf8 -> [UInt8]? in
            guard utf8.count == 64 else { return nil }
            var valid = true
            let bytes = [UInt8](unsafeUninitializedCapacity: 32) { buffer, initialized in
                for i in 0..<32 {
                    guard let high = nibble(utf8[2 * i]), let low = nibble(utf8[2 * i + 1]) else {
                        valid = false
                        break
                    }
                    buffer[i] = high << 4 | low
                    initialized = i + 1
                }
            }
            return valid ? bytes : nil
        }
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func encodeHex(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            for (i, b) in bytes.enumerated() {
                out[2 * i] = hexDigits[Int(b >> 4)]
                out[2 * i + 1] = hexDigits[Int(b & 0x0f)]
            }
            return bytes.count * 2
        }
    }
}


/// The process-wide fetched SHA-256 digest and HMAC implementations. Fetched objects are
/// immutable and reference-counted by OpenSSL, safe to share between threads.
private final class Algorithms: @unchecked Sendable {
    static let shared = Algorithms()

    let sha256Digest: OpaquePointer
    let hmac: OpaquePointer

    private init() {
        guard let md = EVP_MD_fetch(nil, "SHA256", nil) else {
            fatalError("OpenSSL cannot fetch SHA256: \(drainOpenSSLErrors())")
        }
        guard let mac = EVP_MAC_fetch(nil, "HMAC", nil) else {
            fatalError("OpenSSL cannot fetch HMAC: \(drainOpenSSLErrors())")
        }
        sha256Digest = md
        hmac = mac
    }

    func sha256(_ first: [UInt8], _ second: [UInt8], into digest: inout [UInt8]) {
        guard let ctx = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: \(drainOpenSSLErrors())") }
        defer { EVP_MD_CTX_free(ctx) }
        var length: UInt32 = 0
        let ok = EVP_DigestInit_ex2(ctx, sha256Digest, nil) == 1
            && first.withUnsafeBytes { EVP_DigestUpdate(ctx, $0.baseAddress, $0.count) } == 1
            && second.withUnsafeBytes { EVP_DigestUpdate(ctx, $0.baseAddress, $0.count) } == 1
            && digest.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(ctx, $0.baseAddress, &length) } == 1
        guard ok, length == 32 else { fatalError("SHA-256 failed: \(drainOpenSSLErrors())") }
    }
}

/// An HMAC-SHA-256 context initialised with the key once; each MAC runs on a duplicate so
/// the key schedule is not redone per row and concurrent callers never share a context.
private final class HMACTemplate: @unchecked Sendable {
    private let template: OpaquePointer

    init(key: [UInt8]) {
        guard let ctx = EVP_MAC_CTX_new(Algorithms.shared.hmac) else {
            fatalError("EVP_MAC_CTX_new: \(drainOpenSSLErrors())")
        }
        // OSSL_PARAM keeps both pointers until EVP_MAC_init reads them; a Swift string passed
        // straight in would only live for the construct call, so both are C copies.
        let parameterName = strdup(OSSL_MAC_PARAM_DIGEST)!
        let digestName = strdup("SHA256")!
        defer {
            free(parameterName)
            free(digestName)
        }
        var params = [
            OSSL_PARAM_construct_utf8_string(parameterName, digestName, 0),
            OSSL_PARAM_construct_end(),
        ]
        let ok = key.withUnsafeBufferPointer { k in
            params.withUnsafeMutableBufferPointer { p in
                EVP_MAC_init(ctx, k.baseAddress, k.count, p.baseAddress)
            }
        }
        guard ok == 1 else {
            EVP_MAC_CTX_free(ctx)
            fatalError("HMAC-SHA-256 init failed: \(drainOpenSSLErrors())")
        }
        template = ctx
    }

    deinit {
        EVP_MAC_CTX_free(template)
    }

    func mac(_ first: [UInt8], _ second: [UInt8], into digest: inout [UInt8]) {
        guard let ctx = EVP_MAC_CTX_dup(template) else { fatalError("EVP_MAC_CTX_dup: \(drainOpenSSLErrors())") }
        defer { EVP_MAC_CTX_free(ctx) }
        var length = 0
        let capacity = digest.count
        let ok = first.withUnsafeBufferPointer { EVP_MAC_update(ctx, $0.baseAddress, $0.count) } == 1
            && second.withUnsafeBufferPointer { EVP_MAC_update(ctx, $0.baseAddress, $0.count) } == 1
            && digest.withUnsafeMutableBufferPointer { EVP_MAC_final(ctx, $0.baseAddress, &length, capacity) } == 1
        guard ok, length == 32 else { fatalError("HMAC-SHA-256 failed: \(drainOpenSSLErrors())") }
    }
}
