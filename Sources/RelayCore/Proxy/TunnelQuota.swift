import Synchronization

/// Open CONNECT tunnels per principal, over every connection and loop, held to
/// `max-tunnels-per-principal`: one user, or one leaked password, cannot take the relay's
/// connection pool from everyone else. Shared by every session; the count survives reloads
/// (a reload only changes the limit).
public final class TunnelQuota: Sendable {
    private struct State {
        var limit: Int
        var open: [String: Int] = [:]
    }

    private let state: Mutex<State>

    public init(limit: Int) {
        state = Mutex(State(limit: limit))
    }

    /// A reload's new limit; tunnels already open stay open even if they now exceed it.
    public func setLimit(_ limit: Int) {
        state.withLock { $0.limit = limit }
    }

    /// Counts a tunnel for `principal`; false (nothing counted) when it has `limit` open.
    public func admit(_ principal: String) -> Bool {
        state.withLock { state in
            let open = state.open[principal, default: 0]
            guard open < state.limit else { return false }
            state.open[principal] = open + 1
            return true
        }
    }

    /// Ends a tunnel `admit` counted.
    public func release(_ principal: String) {
        state.withLock { state in
            guard let open = state.open[principal] else { return }
            state.open[principal] = open > 1 ? open - 1 : nil
        }
    }

    /// Tunnels `principal` has open now.
    public func openCount(_ principal: String) -> Int {
        state.withLock { $0.open[principal, default: 0] }
    }
}

/// The place one tunnel holds in a `TunnelQuota`, handed from the session to whatever runs
/// the tunnel, which gives it back when the tunnel ends.
public struct TunnelQuotaPlace: Sendable {
    let quota: TunnelQuota
    /// Whom the place counts for.
    public let principal: String

    /// Gives the place back; call once.
    public func release() {
        quota.release(principal)
    }
}
