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

    private let keyed: KeyedHMAC?

    /// `key == nil` chains with plain SHA-256; a non-empty key chains with HMAC-SHA-256.
    public init(key: [UInt8]? = nil) {
        if let key {
            precondition(!key.isEmpty, "an audit hash key must not be empty")
            keyed = KeyedHMAC(key: key)
        } else {
            keyed = nil
        }
    }

    /// True when this chain is keyed (HMAC).
    public var isKeyed: Bool { keyed != nil }

    /// The lowercase hex hash of the row whose canonical bytes are `canonical`, following the
    /// row whose hash is `prevHashHex`. `prevHashHex` must be well formed
    /// (`isWellFormed(hashHex:)`): callers read it from their own previous output or check it.
    public func next(prevHashHex: String, canonical: [UInt8]) -> String {
        guard let prev = Self.decodeHex(prevHashHex) else {
            preconditionFailure("prev hash is not 64 hex characters: \(prevHashHex)")
        }
        var digest = [UInt8](repeating: 0, count: 32)
        prev.withUnsafeBytes { prev in
            canonical.withUnsafeBytes { canonical in
                digest.withUnsafeMutableBytes { digest in
                    if let keyed {
                        keyed.mac(prev, canonical, into: digest)
                    } else {
                        let ctx = ChainSHA256.newContext()
                        defer { EVP_MD_CTX_free(ctx) }
                        ChainSHA256.hash(prev, canonical, into: digest, using: ctx)
                    }
                }
            }
        }
        return Self.encodeHex(digest)
    }

    /// Walks the chain forward one row at a time for a writer, with no allocation per row:
    /// the previous hash stays in raw bytes and the SHA-256 context is reused.
    /// Not thread-safe: each writer owns its cursor.
    public final class Cursor {
        private let chain: AuditHashChain
        private let digestContext: OpaquePointer?
        /// Raw bytes of `hashHex`.
        private let tail = UnsafeMutableRawBufferPointer.allocate(byteCount: 32, alignment: 8)
        private var previous = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 64)
        private var current = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 64)

        /// Starts after the row whose hash is `hashHex` (`genesis` for an empty table), which
        /// must be well formed (`isWellFormed(hashHex:)`).
        public init(chain: AuditHashChain, after hashHex: String) {
            self.chain = chain
            digestContext = chain.keyed == nil ? ChainSHA256.newContext() : nil
            previous.initialize(repeating: UInt8(ascii: "0"))
            current.initialize(repeating: UInt8(ascii: "0"))
            reset(after: hashHex)
        }

        deinit {
            if let digestContext { EVP_MD_CTX_free(digestContext) }
            tail.deallocate()
            previous.deallocate()
            current.deallocate()
        }

        /// Continues from the row whose hash is `hashHex` instead (after re-reading the tail).
        public func reset(after hashHex: String) {
            guard let raw = AuditHashChain.decodeHex(hashHex) else {
                preconditionFailure("hash is not 64 hex characters: \(hashHex)")
            }
            tail.copyBytes(from: raw)
            AuditHashChain.encodeHex(UnsafeRawBufferPointer(tail), into: current)
        }

        /// `prev_hash` of the row `advance` last hashed, 64 lowercase hex bytes; valid until the
        /// next `advance` or `reset`.
        public var prevHashHex: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(previous) }

        /// The hash of the row `advance` last hashed (the chain's tail), 64 lowercase hex
        /// bytes; valid until the next `advance` or `reset`.
        public var hashHex: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(current) }

        /// Hashes the next row, whose canonical bytes are `canonical`, onto the tail.
        public func advance(over canonical: UnsafeRawBufferPointer) {
            swap(&previous, &current)
            if let keyed = chain.keyed {
                keyed.mac(UnsafeRawBufferPointer(tail), canonical, into: tail)
            } else {
                ChainSHA256.hash(UnsafeRawBufferPointer(tail), canonical, into: tail, using: digestContext!)
            }
            AuditHashChain.encodeHex(UnsafeRawBufferPointer(tail), into: current)
        }
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

    private static let hexDigits: StaticString = "0123456789abcdef"

    private static func encodeHex(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            bytes.withUnsafeBytes { encodeHex($0, into: out) }
            return bytes.count * 2
        }
    }

    private static func encodeHex(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableBufferPointer<UInt8>) {
        let digits = hexDigits.utf8Start
        for (i, b) in bytes.enumerated() {
            out[2 * i] = digits[Int(b >> 4)]
            out[2 * i + 1] = digits[Int(b & 0x0f)]
        }
    }
}


/// Plain SHA-256 of two parts on a caller's context, with the digest fetched once per
/// process (`AuthAlgorithms`: OpenSSL 3 fetches contend on a global lock).
private enum ChainSHA256 {
    static func newContext() -> OpaquePointer {
        guard let ctx = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: \(drainOpenSSLErrors())") }
        return ctx
    }

    /// SHA-256 of `first ‖ second` into the 32 bytes at `digest` (which may alias `first`:
    /// both inputs are consumed before the digest is written), reinitialising `ctx`.
    static func hash(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer,
                     into digest: UnsafeMutableRawBufferPointer, using ctx: OpaquePointer) {
        precondition(digest.count >= 32)
        var length: UInt32 = 0
        let ok = EVP_DigestInit_ex2(ctx, AuthAlgorithms.shared.sha256, nil) == 1
            && EVP_DigestUpdate(ctx, first.baseAddress, first.count) == 1
            && EVP_DigestUpdate(ctx, second.baseAddress, second.count) == 1
            && EVP_DigestFinal_ex(ctx, digest.baseAddress!.assumingMemoryBound(to: UInt8.self), &length) == 1
        guard ok, length == 32 else { fatalError("SHA-256 failed: \(drainOpenSSLErrors())") }
    }
}
