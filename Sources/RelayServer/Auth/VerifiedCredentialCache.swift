import RelayCore
import Synchronization

/// Basic credentials proven recently, so the slow password KDF runs once per TTL rather
/// than once per tunnel.
///
/// Entries are keyed by a `CredentialTag` (SipHash-128 under a random per-process key) of
/// the user and password: the process never keeps a password (or an unkeyed hash of one)
/// after the check, and a guess without the password cannot match. An entry is valid
/// only for the user-store generation it was proven under, so a changed or deleted
/// password stops working at once.
final class VerifiedCredentialCache: Sendable {
    private struct Entry {
        var expires: UInt64
        var generation: UInt64
    }

    private let tagger = CredentialTagger()
    private let ttl: UInt64
    private let capacity: Int
    private let entries = Mutex<[CredentialTag: Entry]>([:])

    /// `ttl` in nanoseconds; 0 disables the cache.
    init(ttl: UInt64, capacity: Int = 10_000) {
        self.ttl = ttl
        self.capacity = capacity
    }

    /// The cache key for one credential pair.
    func token(user: String, password: String) -> CredentialTag {
        tagger.tag(user: user, password: password)
    }

    func contains(_ token: CredentialTag, generation: UInt64, now: UInt64) -> Bool {
        guard ttl > 0 else { return false }
        return entries.withLock { entries in
            guard let entry = entries[token] else { return false }
            if entry.expires > now && entry.generation == generation { return true }
            entries.removeValue(forKey: token)
            return false
        }
    }

    func insert(_ token: CredentialTag, generation: UInt64, now: UInt64) {
        guard ttl > 0 else { return }
        entries.withLock { entries in
            if entries.count >= capacity {
                entries = entries.filter { $0.value.expires > now }
                if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[token] = Entry(expires: now + ttl, generation: generation)
        }
    }
}
