import RelayCore
import Synchronization

/// Basic password checks running now, keyed like the verified-login cache, so that clients
/// sending the very same credentials while one check runs wait for it instead of starting
/// their own. Without this, a burst of connections for one user when the cache is cold (at
/// start, or when an entry expires) runs the slow KDF once per connection: 16 clients cost
/// 16 KDFs, and a large enough burst fills the worker queue and is refused.
final class BasicChecksInFlight: Sendable {
    /// Gets the check's outcome: nil when the password is right, else the refusal reason.
    typealias Waiter = @Sendable (_ failure: ReasonCode?) -> Void

    private let waiting = Mutex<[CredentialTag: [Waiter]]>([:])

    /// Adds `waiter` for `token`; true when no check of that token is running, and the
    /// caller must now start one and call `finish` when it ends.
    func join(_ token: CredentialTag, _ waiter: @escaping Waiter) -> Bool {
        waiting.withLock { waiting in
            if waiting[token] != nil {
                waiting[token]!.append(waiter)
                return false
            }
            waiting[token] = [waiter]
            return true
        }
    }

    /// Ends the check of `token`: every waiter gets `outcome`, outside the lock.
    func finish(_ token: CredentialTag, _ outcome: ReasonCode?) {
        let waiters = waiting.withLock { $0.removeValue(forKey: token) } ?? []
        for waiter in waiters { waiter(outcome) }
    }
}
