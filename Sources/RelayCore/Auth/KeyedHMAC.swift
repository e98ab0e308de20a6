import COpenSSL

/// HMAC-SHA-256 under one fixed key, for MACs computed on every request (Digest nonces) or
/// row (the audit hash chain).
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
        [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            first.withUnsafeBytes { first in
                second.withUnsafeBytes { second in
                    mac(first, second, into: UnsafeMutableRawBufferPointer(out))
                }
            }
            count = 32
        }
    }

    /// HMAC-SHA-256 of `first` followed by `second` into the first 32 bytes of `digest`,
    /// which may alias `first`: both inputs are consumed before the digest is written.
    public func mac(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer,
                    into digest: UnsafeMutableRawBufferPointer) {
        precondition(digest.count >= 32)
        let ctx = contexts.borrow()
        defer { contexts.giveBack(ctx) }
        var written = 0
        // A NULL key restarts the MAC under the key the context already holds.
        let ok = EVP_MAC_init(ctx, nil, 0, nil) == 1
            && EVP_MAC_update(ctx, first.baseAddress?.assumingMemoryBound(to: UInt8.self), first.count) == 1
            && EVP_MAC_update(ctx, second.baseAddress?.assumingMemoryBound(to: UInt8.self), second.count) == 1
            && EVP_MAC_final(ctx, digest.baseAddress!.assumingMemoryBound(to: UInt8.self), &written, 32) == 1
        guard ok, written == 32 else { fatalError("HMAC failed: \(drainOpenSSLErrors())") }
    }
}
