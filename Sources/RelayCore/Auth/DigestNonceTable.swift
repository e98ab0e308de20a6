import Synchronization

/// The Digest nonces this relay issued and still honours: for each, when it was issued, the
/// nonce-counts (`nc`) accepted with it, so a captured request cannot be replayed, and the
/// HA1 a client proved with it.
///
/// Counts need not arrive in order: a client that shares one nonce across parallel
/// connections sends `nc=5` on one while `nc=4` is still on its way on another. Each count
/// is accepted once if it is the highest so far or one of the `countWindow` below it not
/// yet seen (a bitmap, as IPsec's anti-replay window); anything else is a replay.
///
/// A nonce is 48 random bytes in base64 and means something only while it is in this table,
/// so checking one is a lookup of its exact text. (The signed nonces this replaced had to be
/// looked up here anyway for their count, and one missing here was answered `stale` whatever
/// its signature said: the HMAC decided nothing, yet cost more than the rest of the check.)
///
/// Bounded twice: at most `capacity` nonces, the oldest forgotten first, and none past its
/// lifetime: expired entries leave from the old end as requests arrive (or `sweep` runs),
/// taking the password-equivalent HA1 with them, zeroed; so does everything on `deinit`.
/// Times are seconds on a clock that does not step: a nonce dated after `now` is stale. An entry's HA1 is answered only for the same user, algorithm and
/// credentials version (`CredentialStore.generation`), so a changed or deleted user is
/// never answered from here. A nonce not (or no longer) here is `stale`, which the
/// authenticator turns into a new challenge with `stale=true`, so the client retries
/// without prompting. Shared by every connection of a listener, hence the mutex.
public final class DigestNonceTable: Sendable {
    /// A nonce's exact text, compared as eight words.
    public struct Key: Hashable, Sendable {
        fileprivate let words: SIMD8<UInt64>

        /// Equal keys are equal texts.
        public static func == (lhs: Key, rhs: Key) -> Bool { lhs.words == rhs.words }

        /// Hashes the first two words only: issued nonces are random throughout, and only
        /// issued nonces are ever inserted, so a client choosing the text of a lookup cannot
        /// crowd a bucket; a quarter of the words is a quarter of the hashing.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(words[0])
            hasher.combine(words[1])
        }

        /// The key of `nonce`, or nil when it cannot be a nonce issued here (wrong length).
        public init?(_ nonce: String) {
            var nonce = nonce
            guard let key = nonce.withUTF8({ Self(bytes: UnsafeRawBufferPointer($0)) }) else { return nil }
            self = key
        }

        /// The key of a nonce's UTF-8 bytes, or nil when they cannot be a nonce issued here.
        init?(bytes: UnsafeRawBufferPointer) {
            guard bytes.count == DigestNonceTable.encodedLength else { return nil }
            words = bytes.loadUnaligned(as: SIMD8<UInt64>.self)
        }
    }

    /// What a request's HA1 proof is remembered with.
    public struct Proof: Sendable {
        /// The user who proved the HA1.
        public var user: String
        /// The algorithm the HA1 belongs to.
        public var algorithm: DigestAlgorithm
        /// The credentials version the HA1 was read under.
        public var version: UInt64
        /// The raw HA1: password-equivalent.
        public var ha1: [UInt8]

        public init(user: String, algorithm: DigestAlgorithm, version: UInt64, ha1: [UInt8]) {
            self.user = user
            self.algorithm = algorithm
            self.version = version
            self.ha1 = ha1
        }
    }

    /// What the table knows of a nonce now.
    public enum Lookup: Sendable, Equatable {
        /// Issued here and within its lifetime, with the HA1 proven with it for the asked
        /// user, algorithm and version, if any.
        case fresh(provenHA1: [UInt8]?)
        /// Never issued here, forgotten, or expired.
        case stale
    }

    /// How far below the highest count a count not seen yet is still accepted: one bit of
    /// `Entry.seenBelow` each.
    public static let countWindow = UInt32(UInt64.bitWidth)

    /// What recording a nonce-count found.
    public enum Outcome: Sendable, Equatable {
        /// The count was not seen before for this nonce (and is not too old to tell).
        case accepted
        /// The count was accepted before, or lies below the window: a replay.
        case replayed
        /// The nonce is not (or no longer) here, or expired.
        case stale
    }

    /// Length of a nonce's text: 48 bytes in base64, no padding.
    public static let encodedLength = 64

    private struct Entry {
        let issuedAt: UInt64
        var highestCount: UInt32 = 0
        /// Bit i set: count `highestCount - 1 - i` was accepted.
        var seenBelow: UInt64 = 0
        var proof: Proof?

        /// Accepts `count` once; false for a replay.
        mutating func accept(_ count: UInt32) -> Bool {
            if count > highestCount {
                let shift = count - highestCount
                // The old highest becomes bit shift-1; counts that slide out are forgotten.
                // (Smart shifts: shifting by 64 or more gives 0.)
                seenBelow = shift > DigestNonceTable.countWindow ? 0 : (seenBelow << UInt64(shift)) | (1 << UInt64(shift - 1))
                highestCount = count
                return true
            }
            let distance = highestCount - count
            guard distance >= 1, distance <= DigestNonceTable.countWindow else { return false }
            let bit: UInt64 = 1 << UInt64(distance - 1)
            guard seenBelow & bit == 0 else { return false }
            seenBelow |= bit
            return true
        }
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Keys in issue order, as a ring that grows to `capacity` as nonces are issued:
        /// `oldest` is the next to go, `count` are live.
        var ring: [Key?] = []
        var oldest = 0
        var count = 0
        var sweptAt: UInt64 = 0
    }

    /// Most nonces remembered at once.
    public let capacity: Int
    /// Seconds a nonce stays fresh after it is issued.
    public let lifetime: UInt64
    private let state: Mutex<State>

    /// A table of up to `capacity` nonces, each fresh for `lifetime` seconds.
    public init(capacity: Int, lifetime: UInt64) {
        precondition(capacity > 0, "a nonce table needs room for at least one nonce")
        precondition(lifetime > 0, "Digest nonce lifetime must be positive")
        self.capacity = capacity
        self.lifetime = lifetime
        state = Mutex(State())
    }

    deinit {
        state.withLock { state in
            for key in Array(state.entries.keys) {
                var forgotten = state.entries.removeValue(forKey: key)
                if forgotten != nil { Self.zero(&forgotten!.proof) }
            }
        }
    }

    /// Issues a new nonce dated `now`, forgetting the oldest when full.
    public func issue(now: UInt64) -> String {
        var nonce: String
        var key: Key
        repeat {
            nonce = AuthCrypto.base64Encode(AuthCrypto.randomBytes(count: 48))
            key = Key(nonce)!
        } while !register(key, now: now)
        return nonce
    }

    /// Looks `key` up at `now`; a fresh nonce also answers the HA1 proven with it by `user`
    /// for `algorithm` under credentials `version` (none asked for when either is nil).
    public func lookup(_ key: Key, now: UInt64, user: String?, algorithm: DigestAlgorithm, version: UInt64?) -> Lookup {
        state.withLock { state in
            sweep(&state, now: now)
            guard let index = state.entries.index(forKey: key),
                  !isExpired(issuedAt: state.entries.values[index].issuedAt, now: now)
            else { return .stale }
            guard let user, let version, let proof = state.entries.values[index].proof, proof.version == version,
                  proof.algorithm == algorithm, AuthSyntax.sameBytes(proof.user, user)
            else { return .fresh(provenHA1: nil) }
            return .fresh(provenHA1: proof.ha1)
        }
    }

    /// Accepts `count` for `key` only if it was never accepted before (see the type's note on
    /// order), and then keeps `proof` (when given) for the nonce's next requests.
    public func record(_ key: Key, count: UInt32, now: UInt64, proof: Proof? = nil) -> Outcome {
        state.withLock { state in
            sweep(&state, now: now)
            // In place, through the index: a copy of the entry would keep a second reference
            // to the HA1 being replaced, and zeroing it would zero a copy.
            guard let index = state.entries.index(forKey: key),
                  !isExpired(issuedAt: state.entries.values[index].issuedAt, now: now)
            else { return .stale }
            guard state.entries.values[index].accept(count) else { return .replayed }
            if let proof {
                Self.zero(&state.entries.values[index].proof)
                state.entries.values[index].proof = proof
            }
            return .accepted
        }
    }

    /// Nonces currently remembered (expired ones included until they are swept).
    public var count: Int {
        state.withLock { $0.count }
    }

    /// Adds a new key, or refuses one already present.
    private func register(_ key: Key, now: UInt64) -> Bool {
        state.withLock { state in
            guard state.entries[key] == nil else { return false }
            sweep(&state, now: now)
            if state.count == capacity { forgetOldest(&state) }
            // Until the ring first fills, the next slot is its end.
            let slot = (state.oldest + state.count) % capacity
            if slot == state.ring.count {
                state.ring.append(key)
            } else {
                state.ring[slot] = key
            }
            state.count += 1
            state.entries[key] = Entry(issuedAt: now)
            return true
        }
    }

    private func isExpired(issuedAt: UInt64, now: UInt64) -> Bool {
        now < issuedAt || now - issuedAt > lifetime
    }

    /// Forgets expired nonces now (once a second at most).
    public func sweep(now: UInt64) {
        state.withLock { sweep(&$0, now: now) }
    }

    /// Forgets expired nonces from the old end, at most once a second: entries are in issue
    /// order, so the first one still fresh ends the sweep.
    private func sweep(_ state: inout State, now: UInt64) {
        guard now != state.sweptAt else { return }
        state.sweptAt = now
        while state.count > 0, let oldest = state.ring[state.oldest],
              let issuedAt = state.entries[oldest]?.issuedAt, isExpired(issuedAt: issuedAt, now: now) {
            forgetOldest(&state)
        }
    }

    private func forgetOldest(_ state: inout State) {
        guard let key = state.ring[state.oldest] else { return }
        state.ring[state.oldest] = nil
        state.oldest = (state.oldest + 1) % capacity
        state.count -= 1
        if var forgotten = state.entries.removeValue(forKey: key) {
            Self.zero(&forgotten.proof)
        }
    }

    /// Overwrites a proof's HA1 (unique once out of the table, so the bytes overwritten are
    /// the ones that were stored).
    private static func zero(_ proof: inout Proof?) {
        proof?.ha1.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
    }
}
