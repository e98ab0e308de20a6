import COpenSSL

/// HMAC-SHA-256 under one fixed key, for MACs computed on every request (Digest nonces, the
/// verified-login cache's tokens).
///
/// `AuthCrypto.hmacSHA256` duplicates an OpenSSL template, keys it and frees it again on
/// every call. Here the key is hashed into contexts once; a MAC borrows a keyed context
/// from a pool and restarts it, which keeps the key.
public final class KeyedHMAC: Sendable {
    private let contexts: OpenSSLContextPool

    /// A MAC keyed with `key`.
    public init(key: [UInt8]) {
        contexts = OpenSSLContextPool(make: {
            guard let ctx = EVP_MAC_CTX_dup(AuthAlgorithms.shared.hmacSHA256Template) else {
                fatalError("EVP_MAC_CTX_dup: \(drainOpenSSLErrors())")
            }
            // HMAC accepts an empty key, but EVP_MAC_init treats a NULL key as "keep the old one".
            let keyBytes = key.isEmpty ? [0] : key
            guard keyBytes.withUnsafeBufferPointer({ EVP_MAC_init(ctx, $0.baseAddress, key.count, nil) }) == 1 else {
                fatalError("HMAC key setup failed: \(drainOpenSSLErrors())")
            }
            return ctx
        }, free: { EVP_MAC_CTX_free($0) })
    }

    /// HMAC-SHA-256 of `first` followed by `second` (32 bytes).
    public func mac(_ first: [UInt8], _ second: [UInt8] = []) -> [UInt8] {
        let ctx = contexts.borrow()
        defer { contexts.giveBack(ctx) }
        var written = 0
        return [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            // A NULL key restarts the MAC under the key the context already holds.
            let ok = EVP_MAC_init(ctx, nil, 0, nil) == 1
                && first.withUnsafeBufferPointer { EVP_MAC_update(ctx, $0.baseAddress, $0.count) } == 1
                && second.withUnsafeBufferPointer { EVP_MAC_update(ctx, $0.baseAddress, $0.count) } == 1
                && EVP_MAC_final(ctx, out.baseAddress, &written, 32) == 1
            guard ok, written == 32 else { fatalError("HMAC failed: \(drainOpenSSLErrors())") }
            count = 32
        }
    }
}
