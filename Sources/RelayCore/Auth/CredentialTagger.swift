import COpenSSL

/// A 128-bit tag standing for one user and password, for remembering a login that passed
/// the slow KDF without remembering the password.
public struct CredentialTag: Hashable, Sendable {
    /// SipHash's output bytes 0–7 and 8–15, as they lie in memory.
    let first: UInt64
    let second: UInt64

    /// The tag's 16 bytes in SipHash's output order.
    var bytes: [UInt8] {
        withUnsafeBytes(of: (first, second)) { Array($0) }
    }
}

/// Tags logins with SipHash-2-4 at its 128-bit output size (OpenSSL's `SIPHASH` MAC) under a
/// random key drawn when the process starts.
///
/// A tag never leaves the process: it is a key in the verified-login cache, so all it must
/// do is make a cached login unreachable without the password. SipHash is a keyed PRF built
/// for exactly that (table keys from attacker-chosen input): without the key, a guessed
/// password hits a cached tag with probability 2⁻¹²⁸. It replaced HMAC-SHA-256, which gave
/// the same guarantee here at four times the cost on every Basic login (about 85 against
/// 370 ns). A memory dump holding key and tags lets an attacker test guesses offline at
/// either MAC's speed, which is why neither is the stored verifier: the KDF is.
public final class CredentialTagger: Sendable {
    private static let keyLength = 16
    private static let tagLength = 16

    private let key: [UInt8]
    private let contexts: OpenSSLContextPool

    /// A tagger under a fresh random key.
    public convenience init() {
        self.init(key: AuthCrypto.randomBytes(count: Self.keyLength))
    }

    /// A tagger under `key` (16 bytes): for checking against SipHash's reference vectors.
    init(key: [UInt8]) {
        precondition(key.count == Self.keyLength, "SipHash takes a 16-byte key")
        self.key = key
        contexts = OpenSSLContextPool(make: {
            guard let ctx = EVP_MAC_CTX_new(AuthAlgorithms.shared.sipHash) else {
                fatalError("EVP_MAC_CTX_new(SIPHASH): \(drainOpenSSLErrors())")
            }
            var size = Self.tagLength
            // The param keeps the pointer to `size`, so it is only used inside this scope.
            let sized = withUnsafeMutablePointer(to: &size) { size in
                var params = [
                    OSSL_PARAM_construct_size_t(AuthAlgorithms.shared.paramSize, size),
                    OSSL_PARAM_construct_end(),
                ]
                return EVP_MAC_CTX_set_params(ctx, &params) == 1
            }
            guard sized else { fatalError("SipHash output size: \(drainOpenSSLErrors())") }
            return ctx
        }, free: { EVP_MAC_CTX_free($0) })
    }

    /// The tag of `user NUL password`: user-ids never hold a NUL (`BasicCredentials` refuses
    /// control characters), so no other pair has the same input.
    public func tag(user: String, password: String) -> CredentialTag {
        var user = user
        var password = password
        let ctx = contexts.borrow()
        defer { contexts.giveBack(ctx) }
        var digest = (UInt64(0), UInt64(0))
        var written = 0
        var separator = UInt8(0)
        // The key goes in on every call: SipHash keys in a few instructions, and nothing then
        // depends on how a provider restarts a MAC without one.
        let ok = key.withUnsafeBufferPointer { EVP_MAC_init(ctx, $0.baseAddress, Self.keyLength, nil) } == 1
            && user.withUTF8 { EVP_MAC_update(ctx, $0.baseAddress, $0.count) } == 1
            && EVP_MAC_update(ctx, &separator, 1) == 1
            && password.withUTF8 { EVP_MAC_update(ctx, $0.baseAddress, $0.count) } == 1
            && withUnsafeMutableBytes(of: &digest) {
                EVP_MAC_final(ctx, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), &written, Self.tagLength)
            } == 1
        guard ok, written == Self.tagLength else { fatalError("SipHash failed: \(drainOpenSSLErrors())") }
        return CredentialTag(first: digest.0, second: digest.1)
    }
}
