import RelayCore
import RelayIO
import Synchronization

/// Where connections come from, as limits and aggregated refusals count them: an IPv4
/// address, or an IPv6 /64 (one host commonly holds a whole /64, so counting single IPv6
/// addresses would give it a fresh allowance per address; the lockout counts the same way).
/// An IPv4-mapped IPv6 peer counts as the IPv4 address it is.
struct ClientSource: Hashable, Sendable, CustomStringConvertible {
    private enum Key: Hashable, Sendable {
        case v4(UInt32)
        case v6Prefix(UInt64)
    }

    private let key: Key

    init(_ peer: SocketAddress) {
        let bytes = peer.ipBytes
        if bytes.count == 4 {
            key = .v4(bytes.reduce(0) { $0 << 8 | UInt32($1) })
            return
        }
        let v6 = IPv6Address(bytes: bytes) ?? IPv6Address(high: 0, low: 0)
        if let v4 = v6.mappedIPv4 {
            key = .v4(v4.value)
        } else {
            key = .v6Prefix(v6.high)
        }
    }

    /// `10.0.0.5`, or `2001:db8:1:2::/64`.
    var description: String {
        switch key {
        case .v4(let value): return IPv4Address(value).description
        case .v6Prefix(let high): return IPv6Address(high: high, low: 0).description + "/64"
        }
    }
}

/// Open connections per `ClientSource`, over every loop and listener, for
/// `max-connections-per-source`: one address holding thousands of silent connections must
/// not take every other client's place under `max-connections`.
final class SourceConnectionCounts: Sendable {
    private let counts = Mutex<[ClientSource: Int]>([:])

    /// Counts a connection from `source`; false (nothing counted) when it has `limit` already.
    func admit(_ source: ClientSource, limit: Int) -> Bool {
        counts.withLock { counts in
            let now = counts[source, default: 0]
            guard now < limit else { return false }
            counts[source] = now + 1
            return true
        }
    }

    /// A connection from `source` closed.
    func release(_ source: ClientSource) {
        counts.withLock { counts in
            guard let now = counts[source] else { return }
            counts[source] = now > 1 ? now - 1 : nil
        }
    }
}
