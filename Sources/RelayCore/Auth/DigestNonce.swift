import COpenSSL

/// Identifies one issued Digest nonce by its random part, compactly enough to remember
/// many of them (`NonceCountTracker`).
public struct DigestNonceID: Hashable, Sendable {
    let high: UInt64
    let low: UInt64
}

/// Issues and checks Digest nonces that need no server-side storage to verify:
/// `base64(issuedAt ‖ random ‖ HMAC-SHA-256(key, label ‖ issuedAt ‖ random)[0..<24])`.
///
/// `issuedAt` is big-endian Unix seconds (the caller supplies the clock, so this stays
/// pure), `random` is 16 bytes from OpenSSL. A nonce whose MAC verifies was issued by a
/// relay holding `key`; its age then says whether it expired. Instances sharing the key
/// (several relays behind one balancer) accept each other's nonces.
public struct DigestNonceSigner: Sendable {
    /// The outcome of checking a nonce string.
    public enum Check: Sendable, Equatable {
        /// Issued with this key and still within its lifetime.
        case fresh(DigestNonceID)
        /// Issued with this key, but older than the lifetime.
        case expired(DigestNonceID)
        /// Not a nonce issued with this key (malformed, forged, from a rotated key, or
        /// dated in the future).
        case foreign
    }

    /// Length of a nonce string: 48 bytes in base64, no padding.
    public static let encodedLength = 64
    /// How far in the future a nonce may be dated (clock steps between instances).
    public static let allowedClockSkew: UInt64 = 60

    private static let label = Array("dynrelay digest nonce v1".utf8)
    private static let macLength = 24
    private let hmac: KeyedHMAC

    /// A signer keyed with `key` (at least 32 bytes of secret randomness).
    public init(key: [UInt8]) {
        precondition(key.count >= 32, "the Digest nonce key needs at least 32 bytes")
        hmac = KeyedHMAC(key: key)
    }

    /// A new nonce dated `now` (Unix seconds), with its identifier.
    public func issue(now: UInt64) -> (nonce: String, id: DigestNonceID) {
        let body = Self.bigEndianBytes(now) + AuthCrypto.randomBytes(count: 16)
        let mac = hmac.mac(Self.label, body).prefix(Self.macLength)
        return (AuthCrypto.base64Encode(body + mac), Self.id(of: body))
    }

    /// Checks `nonce` at `now` against a lifetime of `lifetime` seconds.
    public func check(_ nonce: String, now: UInt64, lifetime: UInt64) -> Check {
        guard nonce.utf8.count == Self.encodedLength,
              let raw = try? AuthCrypto.base64Decode(nonce, maxDecodedCount: 48), raw.count == 48
        else { return .foreign }
        let body = Array(raw[0..<24])
        let expected = hmac.mac(Self.label, body)
        let macMatches = raw.withUnsafeBytes { raw in
            expected.withUnsafeBytes { CRYPTO_memcmp(raw.baseAddress! + 24, $0.baseAddress, Self.macLength) == 0 }
        }
        guard macMatches else { return .foreign }
        let issuedAt = body[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard issuedAt <= now &+ Self.allowedClockSkew else { return .foreign }
        let id = Self.id(of: body)
        return now > issuedAt && now - issuedAt > lifetime ? .expired(id) : .fresh(id)
    }

    private static func id(of body: [UInt8]) -> DigestNonceID {
        DigestNonceID(high: body[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) },
                      low: body[16..<24].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }

    private static func bigEndianBytes(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }
}
