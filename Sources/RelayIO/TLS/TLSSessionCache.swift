import COpenSSL
import Synchronization

/// The last resumable session of each upstream (`host:port`), for a client context: the next
/// connection to the same upstream offers it and skips the full handshake. Bounded: past
/// `capacity` upstreams the one stored longest ago goes. Shared by every loop using the
/// context, hence the `Mutex`.
public final class TLSSessionCache: Sendable {
    /// An `SSL_SESSION` reference the cache owns. Sendable: OpenSSL reference-counts
    /// sessions atomically and a stored session is never modified, only handed out with a
    /// reference of its own (`SSL_SESSION_up_ref`) under the cache's lock.
    private struct Session: @unchecked Sendable {  // see above
        let handle: OpaquePointer
    }

    private struct State {
        var sessions: [String: Session] = [:]
        /// Keys in the order stored, oldest first (a key stored again moves to the end).
        var order: [String] = []
    }

    /// Upstreams kept at most.
    public let capacity: Int
    private let state = Mutex(State())

    /// An empty cache for up to `capacity` upstreams.
    public init(capacity: Int) {
        precondition(capacity > 0, "a session cache holds at least one session")
        self.capacity = capacity
    }

    deinit {
        state.withLock { state in
            for session in state.sessions.values { SSL_SESSION_free(session.handle) }
        }
    }

    /// Upstreams with a session now.
    public var count: Int { state.withLock { $0.sessions.count } }

    /// Takes over the caller's reference to `session` as `key`'s latest.
    func store(_ session: OpaquePointer, for key: String) {
        let stored = Session(handle: session)
        let dropped: [Session] = state.withLock { state in
            var dropped: [Session] = []
            if let old = state.sessions.updateValue(stored, forKey: key) {
                dropped.append(old)
                state.order.removeAll { $0 == key }
            }
            state.order.append(key)
            while state.order.count > capacity {
                let oldest = state.order.removeFirst()
                if let session = state.sessions.removeValue(forKey: oldest) { dropped.append(session) }
            }
            return dropped
        }
        for session in dropped { SSL_SESSION_free(session.handle) }
    }

    /// `key`'s session with a reference for the caller (who frees it), or nil.
    func session(for key: String) -> OpaquePointer? {
        state.withLock { state in
            // A session OpenSSL marked unusable (its connection ended without close_notify)
            // would only cost the server a lookup.
            guard let session = state.sessions[key], SSL_SESSION_is_resumable(session.handle) == 1 else { return nil }
            SSL_SESSION_up_ref(session.handle)
            return session.handle
        }
    }

    /// Forgets `key`'s session: a handshake that failed with it should not offer it again.
    func remove(_ key: String) {
        let dropped = state.withLock { state -> Session? in
            state.order.removeAll { $0 == key }
            return state.sessions.removeValue(forKey: key)
        }
        if let dropped { SSL_SESSION_free(dropped.handle) }
    }
}
