import COpenSSL

/// Incremental SHA-256 through OpenSSL, for byte-exact transfer checks on MiBs of data
/// without keeping them in memory.
final class SHA256Hasher: @unchecked Sendable {
    private let context: OpaquePointer

    init() {
        // A test box without a working libcrypto cannot run these tests at all.
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            preconditionFailure("OpenSSL SHA-256 unavailable")
        }
        self.context = context
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update(raw: $0) }
    }

    func update(raw: UnsafeRawBufferPointer) {
        guard raw.count > 0 else { return }
        EVP_DigestUpdate(context, raw.baseAddress, raw.count)
    }

    /// Lowercase hex digest; the hasher must not be used afterwards.
    func finalHex() -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        return digest.map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let hasher = SHA256Hasher()
        hasher.update(bytes)
        return hasher.finalHex()
    }
}

/// Deterministic pseudo-random payloads: a shifted, dropped or duplicated byte anywhere
/// changes the hash, which a repeating pattern might not reveal.
enum PatternBytes {
    /// `count` bytes from a SplitMix64 stream seeded with `seed`.
    static func make(count: Int, seed: UInt64) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var state = seed
        out.withUnsafeMutableBytes { raw in
            let words = count / 8
            let wordPointer = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            for index in 0..<words {
                var value = next(&state)
                withUnsafeBytes(of: &value) { (wordPointer + index * 8).update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: 8) }
            }
            var tail = next(&state)
            withUnsafeBytes(of: &tail) { bytes in
                for index in (words * 8)..<count { raw[index] = bytes[index - words * 8] }
            }
        }
        return out
    }

    private static func next(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
