import Synchronization

/// Remembers, for a bounded number of recently issued Digest nonces, the highest
/// nonce-count (`nc`) accepted with each, so a captured request cannot be replayed.
///
/// A nonce must be registered when it is issued; a nonce it does not know (never issued
/// here, or forgotten to make room) is `unknown`, which the authenticator answers with
/// `stale=true` so the client simply retries with a fresh nonce. Memory is bounded by
/// `capacity`: the oldest issued nonce is forgotten first, which is also the one closest
/// to expiry. Shared by every connection of a listener, hence the mutex.
public final class NonceCountTracker: Sendable {
    /// What recording a nonce-count found.
    public enum Outcome: Sendable, Equatable {
        /// The count is higher than any before for this nonce, and is now the highest.
        case accepted
        /// The count is not higher than one already accepted: a replay.
        case replayed
        /// The nonce is not (or no longer) tracked.
        case unknown
    }

    private struct State {
        var highestCount: [DigestNonceID: UInt32] = [:]
        /// Registered ids in issue order, as a ring; `next` is the oldest once full.
        var ring: [DigestNonceID] = []
        var next = 0
    }

    /// Most nonces remembered at once.
    public let capacity: Int
    private let state: Mutex<State>

    /// A tracker remembering up to `capacity` nonces.
    public init(capacity: Int) {
        precondition(capacity > 0, "a nonce tracker needs room for at least one nonce")
        self.capacity = capacity
        state = Mutex(State())
    }

    /// Starts tracking a newly issued nonce, forgetting the oldest when full.
    public func register(_ id: DigestNonceID) {
        state.withLock { state in
            guard state.highestCount[id] == nil else { return }
            if state.ring.count < capacity {
                state.ring.append(id)
            } else {
                state.highestCount[state.ring[state.next]] = nil
                state.ring[state.next] = id
                state.next = (state.next + 1) % capacity
            }
            state.highestCount[id] = 0
        }
    }

    /// Accepts `count` for `id` only if it is higher than every count accepted before.
    public func record(_ id: DigestNonceID, count: UInt32) -> Outcome {
        state.withLock { state in
            guard let highest = state.highestCount[id] else { return .unknown }
            guard count > highest else { return .replayed }
            state.highestCount[id] = count
            return .accepted
        }
    }

    /// Number of nonces currently tracked.
    public var count: Int {
        state.withLock { $0.highestCount.count }
    }
}
