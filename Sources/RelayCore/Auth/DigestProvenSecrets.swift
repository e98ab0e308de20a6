import Synchronization

/// The HA1 a Digest client proved it knows, kept for the nonce it proved it with, so the
/// next request on that nonce (a browser counts `nc` up on one nonce for minutes) is checked
/// without opening the sealed HA1 from the user store again: that lookup and AES-GCM open
/// were the largest single cost of a Digest request.
///
/// An entry holds password-equivalent bytes, so it is as short-lived as the nonce: it is
/// used only while its nonce is fresh, dropped once `expires` passes (swept at most a
/// second late while requests arrive), and only for the same user, algorithm and
/// credentials version (`CredentialStore.generation`), so a changed or deleted user is
/// never answered from here. Not a process-lifetime cache of secrets: nothing outlives its
/// nonce. Shared by every connection of a listener, hence the mutex.
public final class DigestProvenSecrets: Sendable {
    private struct Entry {
        let user: String
        let algorithm: DigestAlgorithm
        let version: UInt64
        var ha1: [UInt8]
        let expires: UInt64
    }

    private struct State {
        var entries: [DigestNonceID: Entry] = [:]
        var sweptAt: UInt64 = 0
    }

    /// Most entries at once; past it, the expired ones go, then everything.
    public let capacity: Int
    private let state = Mutex(State())

    public init(capacity: Int) {
        precondition(capacity > 0, "a secret cache needs room for at least one entry")
        self.capacity = capacity
    }

    /// The HA1 proven with nonce `id` by `user` for `algorithm` under credentials `version`,
    /// if it has not expired at `now` (Unix seconds).
    public func ha1(for id: DigestNonceID, user: String, algorithm: DigestAlgorithm, version: UInt64,
                    now: UInt64) -> [UInt8]? {
        state.withLock { state in
            Self.sweep(&state, now: now)
            guard let entry = state.entries[id], entry.expires > now, entry.version == version,
                  entry.algorithm == algorithm, AuthSyntax.sameBytes(entry.user, user)
            else { return nil }
            return entry.ha1
        }
    }

    /// Keeps `ha1`, just proven by `user` with nonce `id`, until `expires` (Unix seconds).
    public func remember(_ ha1: [UInt8], for id: DigestNonceID, user: String, algorithm: DigestAlgorithm,
                         version: UInt64, expires: UInt64, now: UInt64) {
        state.withLock { state in
            Self.sweep(&state, now: now)
            if state.entries.count >= capacity {
                Self.sweep(&state, now: now, force: true)
                if state.entries.count >= capacity { Self.clear(&state) }
            }
            state.entries[id] = Entry(user: user, algorithm: algorithm, version: version, ha1: ha1, expires: expires)
        }
    }

    /// Entries currently held (expired ones included until the next sweep).
    public var count: Int {
        state.withLock { $0.entries.count }
    }

    /// Drops expired entries, at most once per second unless `force`d.
    private static func sweep(_ state: inout State, now: UInt64, force: Bool = false) {
        guard force || now != state.sweptAt else { return }
        state.sweptAt = now
        for (id, entry) in state.entries where entry.expires <= now {
            drop(id, from: &state)
        }
    }

    private static func clear(_ state: inout State) {
        for id in Array(state.entries.keys) {
            drop(id, from: &state)
        }
    }

    /// Removes an entry and zeroes its HA1 (the array is unique once out of the table, so
    /// the bytes overwritten are the ones that were stored).
    private static func drop(_ id: DigestNonceID, from state: inout State) {
        var dropped = state.entries.removeValue(forKey: id)
        dropped?.ha1.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
    }
}
