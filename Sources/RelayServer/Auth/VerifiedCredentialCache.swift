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
///
/// An entry in the last fifth of its life is renewed ahead of time: the login that finds
/// it is granted at once and starts one background check (`Lookup.provenRenewDue`), whose
/// success proves the entry for another TTL. Every grant is still within one TTL of a real
/// KDF check, and a user who keeps connecting (at least once per fifth of the TTL) usually
/// waits for no KDF after the first: before, every connection of theirs stalled behind it
/// (about 80 ms here) once per TTL. They still wait after a change to the user store
/// (which drops every proof) or when the worker pool was too busy to renew.
final class VerifiedCredentialCache: Sendable {
    /// What a login's credentials are known as.
    enum Lookup: Equatable {
        /// Proven within the TTL: grant.
        case proven
        /// Proven, and this caller should renew the proof with a background check (grant too).
        case provenRenewDue
        /// Not proven (never, expired, or under another store generation): check now.
        case unknown
    }

    private struct Entry {
        var expires: UInt64
        var generation: UInt64
        /// A background check of this entry has been started.
        var renewing = false
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

    func lookup(_ token: CredentialTag, generation: UInt64, now: UInt64) -> Lookup {
        guard ttl > 0 else { return .unknown }
        return entries.withLock { entries in
            guard var entry = entries[token] else { return .unknown }
            guard entry.expires > now && entry.generation == generation else {
                entries.removeValue(forKey: token)
                return .unknown
            }
            guard !entry.renewing, entry.expires - now <= ttl / 5 else { return .proven }
            entry.renewing = true
            entries[token] = entry
            return .provenRenewDue
        }
    }

    /// Forgets `token` (a renewal found the password no longer right).
    func remove(_ token: CredentialTag) {
        _ = entries.withLock { $0.removeValue(forKey: token) }
    }

    /// A renewal `lookup` asked for could not start: the next login in the window asks again.
    func renewalNotStarted(_ token: CredentialTag) {
        entries.withLock { entries in
            entries[token]?.renewing = false
        }
    }

    func insert(_ token: CredentialTag, generation: UInt64, now: UInt64) {
        guard ttl > 0 else { return }
        entries.withLock { entries in
            if entries.count >= capacity {
                entries = entries.filter { $0.value.expires > now }
                if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            }
            // A check made against an older store generation (a renewal that straddled a
            // change) must not replace a proof made against a newer one.
            if let existing = entries[token], existing.generation &- generation < UInt64.max / 2,
               existing.generation != generation {
                return
            }
            entries[token] = Entry(expires: now + ttl, generation: generation)
        }
    }
}
