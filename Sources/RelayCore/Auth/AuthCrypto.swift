import COpenSSL

/// The cryptographic primitives proxy authentication is built from, every one of them
/// OpenSSL's (EVP digests, EVP_MAC, EVP_KDF, EVP ciphers, `RAND_bytes`, `CRYPTO_memcmp`).
///
/// The algorithms are fixed and fetched once (`AuthAlgorithms`), so an OpenSSL failure here
/// means a broken installation, not bad input: it stops the process with OpenSSL's error
/// stack rather than letting authentication continue on an undefined result. The one
/// exception is the legacy provider (MD4, DES), which a distribution may leave out:
/// `isLegacyAvailable` says whether NTLM can work, and `md4` returns nil without it.
public enum AuthCrypto {
    /// True when OpenSSL's legacy provider could be loaded, which NTLM needs (MD4 for the
    /// NT hash, DES for NTLM2 session responses).
    public static var isLegacyAvailable: Bool {
        AuthAlgorithms.shared.md4 != nil && AuthAlgorithms.shared.desECB != nil
    }

    /// MD4 of `data` (16 bytes), or nil when the legacy provider is unavailable.
    public static func md4(_ data: [UInt8]) -> [UInt8]? {
        guard let md = AuthAlgorithms.shared.md4 else { return nil }
        return digest(md, data, length: 16)
    }

    /// MD5 of `data` (16 bytes).
    public static func md5(_ data: [UInt8]) -> [UInt8] {
        digest(AuthAlgorithms.shared.md5, data, length: 16)
    }

    /// SHA-256 of `data` (32 bytes).
    public static func sha256(_ data: [UInt8]) -> [UInt8] {
        digest(AuthAlgorithms.shared.sha256, data, length: 32)
    }

    /// HMAC-MD5 of `data` under `key` (16 bytes).
    public static func hmacMD5(key: [UInt8], data: [UInt8]) -> [UInt8] {
        hmac(AuthAlgorithms.shared.hmacMD5Template, key: key, data: data, length: 16)
    }

    /// HMAC-SHA-256 of `data` under `key` (32 bytes).
    public static func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
        hmac(AuthAlgorithms.shared.hmacSHA256Template, key: key, data: data, length: 32)
    }

    /// PBKDF2 with HMAC-SHA-256 (RFC 8018): `length` bytes derived from `password` and `salt`.
    /// `iterations` and `length` must be positive.
    public static func pbkdf2SHA256(password: [UInt8], salt: [UInt8], iterations: Int, length: Int) -> [UInt8] {
        precondition(iterations > 0 && iterations <= Int(UInt32.max), "PBKDF2 iterations out of range")
        precondition(length > 0, "PBKDF2 output length must be positive")
        guard let ctx = EVP_KDF_CTX_new(AuthAlgorithms.shared.pbkdf2) else {
            fatalError("EVP_KDF_CTX_new: \(drainOpenSSLErrors())")
        }
        defer { EVP_KDF_CTX_free(ctx) }
        var password = password
        var salt = salt
        var iterationCount = UInt64(iterations)
        var output = [UInt8](repeating: 0, count: length)
        // OpenSSL reads the octet strings during derive only; an empty password still
        // needs a valid pointer, hence the one spare byte.
        password.append(0)
        salt.append(0)
        // Every pointer the OSSL_PARAMs hold must outlive EVP_KDF_derive, so all of them
        // are process-lifetime C strings or come from enclosing with… scopes.
        let names = AuthAlgorithms.shared
        let ok = password.withUnsafeMutableBytes { pass in
            salt.withUnsafeMutableBytes { saltBytes in
                withUnsafeMutablePointer(to: &iterationCount) { iterations in
                    var params = [
                        OSSL_PARAM_construct_utf8_string(names.paramDigest, UnsafeMutablePointer(mutating: names.nameSHA256), 0),
                        OSSL_PARAM_construct_octet_string(names.paramPassword, pass.baseAddress, pass.count - 1),
                        OSSL_PARAM_construct_octet_string(names.paramSalt, saltBytes.baseAddress, saltBytes.count - 1),
                        OSSL_PARAM_construct_uint64(names.paramIterations, iterations),
                        OSSL_PARAM_construct_end(),
                    ]
                    return output.withUnsafeMutableBufferPointer { out in
                        EVP_KDF_derive(ctx, out.baseAddress, out.count, &params)
                    }
                }
            }
        }
        guard ok == 1 else { fatalError("PBKDF2-SHA256 failed: \(drainOpenSSLErrors())") }
        return output
    }

    /// True when `a` and `b` hold the same bytes, in time that depends only on their
    /// lengths (`CRYPTO_memcmp`). Lengths are not secret: different lengths return false.
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { a in b.withUnsafeBytes { b in constantTimeEquals(a, b) } }
    }

    /// `constantTimeEquals` over raw bytes.
    static func constantTimeEquals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        return a.isEmpty || CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0
    }

    /// `count` bytes from OpenSSL's CSPRNG. A process that cannot get randomness must not
    /// issue nonces or challenges, so failure stops it.
    public static func randomBytes(count: Int) -> [UInt8] {
        precondition(count >= 0 && count <= Int(Int32.max))
        var bytes = [UInt8](repeating: 0, count: count)
        if count == 0 { return bytes }
        let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
        guard ok == 1 else { fatalError("RAND_bytes failed: \(drainOpenSSLErrors())") }
        return bytes
    }

    /// DES-ECB encryption of one 8-byte `block` under a 56-bit key given as 7 bytes (the
    /// NTLM convention: parity bits are inserted here). Nil without the legacy provider.
    static func desEncryptBlock(key56: ArraySlice<UInt8>, block: [UInt8]) -> [UInt8]? {
        precondition(key56.count == 7 && block.count == 8)
        guard let cipher = AuthAlgorithms.shared.desECB else { return nil }
        let key = expandDESKey(Array(key56))
        guard let ctx = EVP_CIPHER_CTX_new() else { fatalError("EVP_CIPHER_CTX_new: \(drainOpenSSLErrors())") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var output = [UInt8](repeating: 0, count: 16)
        var written: Int32 = 0
        let ok = EVP_EncryptInit_ex2(ctx, cipher, key, nil, nil) == 1
            && EVP_CIPHER_CTX_set_padding(ctx, 0) == 1
            && output.withUnsafeMutableBufferPointer { EVP_EncryptUpdate(ctx, $0.baseAddress, &written, block, 8) } == 1
        guard ok, written == 8 else { fatalError("DES-ECB failed: \(drainOpenSSLErrors())") }
        return Array(output[0..<8])
    }

    /// Spreads 56 key bits over 8 bytes, 7 bits each, with the low bit set for odd parity
    /// (DES ignores it; set for tidiness with implementations that check).
    private static func expandDESKey(_ k: [UInt8]) -> [UInt8] {
        let spread: [UInt8] = [
            k[0] >> 1,
            (k[0] & 0x01) << 6 | k[1] >> 2,
            (k[1] & 0x03) << 5 | k[2] >> 3,
            (k[2] & 0x07) << 4 | k[3] >> 4,
            (k[3] & 0x0F) << 3 | k[4] >> 5,
            (k[4] & 0x1F) << 2 | k[5] >> 6,
            (k[5] & 0x3F) << 1 | k[6] >> 7,
            k[6] & 0x7F,
        ]
        return spread.map { seven in
            let byte = seven << 1
            return byte.nonzeroBitCount % 2 == 0 ? byte | 1 : byte
        }
    }

    /// Idle digest contexts: a Digest request hashes twice, and a context reused for the same
    /// algorithm keeps OpenSSL's per-algorithm state instead of allocating it each time.
    private static let digestContexts = OpenSSLContextPool(make: {
        guard let ctx = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: \(drainOpenSSLErrors())") }
        return ctx
    }, free: { EVP_MD_CTX_free($0) })

    private static func digest(_ md: OpaquePointer, _ data: [UInt8], length: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: length) { out, count in
            data.withUnsafeBytes { digest(md, $0, length: length, into: UnsafeMutableRawBufferPointer(out)) }
            count = length
        }
    }

    /// The `length`-byte digest of `data` into the start of `output`, with no array on
    /// either side (a Digest response hashes twice per request).
    static func digest(_ md: OpaquePointer, _ data: UnsafeRawBufferPointer, length: Int,
                       into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count >= length)
        let ctx = digestContexts.borrow()
        defer { digestContexts.giveBack(ctx) }
        var written: UInt32 = 0
        let ok = EVP_DigestInit_ex2(ctx, md, nil) == 1
            && EVP_DigestUpdate(ctx, data.baseAddress, data.count) == 1
            && EVP_DigestFinal_ex(ctx, output.baseAddress!.assumingMemoryBound(to: UInt8.self), &written) == 1
        guard ok, Int(written) == length else { fatalError("digest failed: \(drainOpenSSLErrors())") }
    }

    private static func hmac(_ template: OpaquePointer, key: [UInt8], data: [UInt8], length: Int) -> [UInt8] {
        guard let ctx = EVP_MAC_CTX_dup(template) else { fatalError("EVP_MAC_CTX_dup: \(drainOpenSSLErrors())") }
        defer { EVP_MAC_CTX_free(ctx) }
        var output = [UInt8](repeating: 0, count: length)
        var written = 0
        // HMAC accepts an empty key, but EVP_MAC_init treats a NULL key as "keep the old one".
        let keyBytes = key.isEmpty ? [0] : key
        let ok = keyBytes.withUnsafeBufferPointer { EVP_MAC_init(ctx, $0.baseAddress, key.count, nil) } == 1
            && data.withUnsafeBufferPointer { EVP_MAC_update(ctx, $0.baseAddress, $0.count) } == 1
            && output.withUnsafeMutableBufferPointer { EVP_MAC_final(ctx, $0.baseAddress, &written, length) } == 1
        guard ok, written == length else { fatalError("HMAC failed: \(drainOpenSSLErrors())") }
        return output
    }
}
