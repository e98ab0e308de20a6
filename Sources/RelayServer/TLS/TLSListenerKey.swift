import RelayCore

/// Which `listen … tls` line a listening socket serves, stable across reloads: the address
/// as written (port 0 stays 0) and how many earlier TLS lines name the same address. A
/// position in the config would move when a line is added above; the address alone is
/// ambiguous only for repeated `:0` lines, which the occurrence tells apart in the order
/// `ListenerSet` matches kept sockets, so a kept socket keeps its key and finds the
/// context the reload built for its line.
struct TLSListenerKey: Hashable, Sendable {
    let address: ListenAddress
    let occurrence: Int

    /// The keys of `listeners`, in their order.
    static func keys(_ listeners: [TLSListener]) -> [TLSListenerKey] {
        var seen: [ListenAddress: Int] = [:]
        return listeners.map { listener in
            let occurrence = seen[listener.address, default: 0]
            seen[listener.address] = occurrence + 1
            return TLSListenerKey(address: listener.address, occurrence: occurrence)
        }
    }
}
