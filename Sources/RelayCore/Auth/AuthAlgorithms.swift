import COpenSSL

/// The OpenSSL algorithm objects authentication needs, fetched once per process.
///
/// OpenSSL 3 takes a global lock on every fetch, so each `EVP_MD`, `EVP_MAC` template and
/// `EVP_CIPHER` is fetched here once and shared; fetched objects and initialised templates
/// are immutable, and every use works on its own `EVP_*_CTX` (or a duplicate of a template),
/// so sharing them between threads is safe.
///
/// MD4 and single DES live only in OpenSSL's legacy provider. They are fetched from a
/// private library context that has the legacy and default providers loaded explicitly,
/// not from the process-wide default context: loading the legacy provider there would also
/// make RC4, single DES and other legacy ciphers fetchable by every `SSL_CTX` the relay
/// builds, including the security-level-0 contexts kept for TLS 1.0/1.1 peers.
final class AuthAlgorithms: @unchecked Sendable {  // immutable after init; each use makes its own EVP context
    static let shared = AuthAlgorithms()

    let md4: OpaquePointer?
    let md5: OpaquePointer
    let sha256: OpaquePointer
    let desECB: OpaquePointer?
    let pbkdf2: OpaquePointer
    /// AES-256-GCM for `SecretBox`, which seals the user store's password-equivalent columns.
    let aes256GCM: OpaquePointer
    /// SipHash-2-4 for `CredentialTagger`.
    let sipHash: OpaquePointer
    /// HMAC contexts with the digest already set; `EVP_MAC_init` only adds the key.
    let hmacMD5Template: OpaquePointer
    let hmacSHA256Template: OpaquePointer

    /// `OSSL_PARAM` names and values as C strings that live as long as the process.
    /// An `OSSL_PARAM` keeps the pointers it is built from, and a Swift `String` passed as
    /// `const char *` is only valid during that one call (short strings such as "pass" are
    /// copied to a temporary), so params built inline would point at dead memory.
    let paramDigest = cStringCopy(OSSL_ALG_PARAM_DIGEST)
    let paramPassword = cStringCopy(OSSL_KDF_PARAM_PASSWORD)
    let paramSalt = cStringCopy(OSSL_KDF_PARAM_SALT)
    let paramIterations = cStringCopy(OSSL_KDF_PARAM_ITER)
    let nameSHA256 = cStringCopy("SHA256")
    let paramSize = cStringCopy(OSSL_MAC_PARAM_SIZE)

    private init() {
        // The providers stay loaded for the life of the process, like the context itself.
        let legacyContext = OSSL_LIB_CTX_new()
        var legacyLoaded = false
        if let legacyContext {
            legacyLoaded = OSSL_PROVIDER_load(legacyContext, "legacy") != nil
                && OSSL_PROVIDER_load(legacyContext, "default") != nil
        }
        if legacyLoaded {
            md4 = EVP_MD_fetch(legacyContext, "MD4", nil)
            desECB = EVP_CIPHER_fetch(legacyContext, "DES-ECB", nil)
        } else {
            md4 = nil
            desECB = nil
        }
        // A missing legacy provider is reported through `AuthCrypto.isLegacyAvailable`, not
        // a crash: Basic and Digest keep working without it.
        ERR_clear_error()

        guard let md5 = EVP_MD_fetch(nil, "MD5", nil),
              let sha256 = EVP_MD_fetch(nil, "SHA256", nil),
              let hmac = EVP_MAC_fetch(nil, "HMAC", nil),
              let pbkdf2 = EVP_KDF_fetch(nil, "PBKDF2", nil),
              let aes256GCM = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil),
              let sipHash = EVP_MAC_fetch(nil, "SIPHASH", nil)
        else {
            fatalError("OpenSSL cannot fetch MD5, SHA256, HMAC, PBKDF2, AES-256-GCM or SIPHASH: \(drainOpenSSLErrors())")
        }
        self.sipHash = sipHash
        self.md5 = md5
        self.sha256 = sha256
        self.pbkdf2 = pbkdf2
        self.aes256GCM = aes256GCM
        hmacMD5Template = Self.hmacTemplate(hmac, digestName: "MD5")
        hmacSHA256Template = Self.hmacTemplate(hmac, digestName: "SHA256")
        EVP_MAC_free(hmac)
    }

    private static func hmacTemplate(_ hmac: OpaquePointer, digestName: String) -> OpaquePointer {
        guard let ctx = EVP_MAC_CTX_new(hmac) else {
            fatalError("EVP_MAC_CTX_new: \(drainOpenSSLErrors())")
        }
        // Only needed until set_params returns, which copies what it keeps.
        let key = cStringCopy(OSSL_MAC_PARAM_DIGEST)
        let name = cStringCopy(digestName)
        defer {
            key.deallocate()
            name.deallocate()
        }
        var params = [
            OSSL_PARAM_construct_utf8_string(key, UnsafeMutablePointer(mutating: name), 0),
            OSSL_PARAM_construct_end(),
        ]
        let ok = EVP_MAC_CTX_set_params(ctx, &params)
        guard ok == 1 else {
            fatalError("HMAC-\(digestName) setup failed: \(drainOpenSSLErrors())")
        }
        return ctx
    }
}

/// A NUL-terminated copy of `text` on the heap, valid until deallocated.
private func cStringCopy(_ text: String) -> UnsafePointer<CChar> {
    let bytes = text.utf8CString
    let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
    bytes.withUnsafeBufferPointer { buffer.initialize(from: $0.baseAddress!, count: $0.count) }
    return UnsafePointer(buffer)
}
