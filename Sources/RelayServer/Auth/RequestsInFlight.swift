import Synchronization

/// Slow credential requests running now (a Basic password check, a Digest helper's HA1
/// lookup), keyed by what determines their answer, so that clients asking the very same
/// thing while one runs wait for it instead of starting their own. Without this a burst of
/// connections for one user when the cache is cold (at start, or when an entry expires)
/// runs the slow KDF once per connection: 16 clients cost 16 KDFs, a browser's parallel
/// requests 6 helper lookups, and a large enough burst fills the queue and is refused.
final class RequestsInFlight<Key: Hashable & Sendable, Answer: Sendable>: Sendable {
    typealias Waiter = @Sendable (Answer) -> Void

    private let waiting = Mutex<[Key: [Waiter]]>([:])

    /// Adds `waiter` for `key`; true when no request for it is running, and the caller must
    /// now start one and call `finish` when it ends.
    func join(_ key: Key, _ waiter: @escaping Waiter) -> Bool {
        waiting.withLock { waiting in
            if waiting[key] != nil {
                waiting[key]!.append(waiter)
                return false
            }
            waiting[key] = [waiter]
            return true
        }
    }

    /// Ends the request for `key`: every waiter gets `answer`, outside the lock.
    func finish(_ key: Key, _ answer: Answer) {
        let waiters = waiting.withLock { $0.removeValue(forKey: key) } ?? []
        for waiter in waiters { waiter(answer) }
    }
}
