import Synchronization

/// The machine the relay runs on, as the resolved-address check must see it: its own
/// interface addresses, guarded like loopback (a registered name resolving to one reaches
/// services that listen only "inside" the host), and the relay's own listening endpoints,
/// never a destination at all (one write of 300 CONNECTs to the relay's own port would
/// otherwise nest 300 tunnels, each holding two sockets and an audit row).
///
/// The server fills it from `getifaddrs` and the bound listeners, and every loop reads it on
/// every check: a snapshot behind a lock, replaced whole, read without copying the sets.
public final class LocalHost: Sendable {
    private struct Snapshot: Sendable {
        var interfaceAddresses: Set<IPAddress> = []
        var listeners: Set<ListenAddress> = []
        /// Ports of listeners on an unspecified address.
        var anyAddressPorts: Set<UInt16> = []
        /// Every listening port, whatever the address.
        var ports: Set<UInt16> = []
    }

    private let snapshot = Mutex(Snapshot())

    /// Knows nothing yet: no address is the host's own and no endpoint is the relay's.
    public init() {}

    /// Replaces the host's own interface addresses.
    public func update(interfaceAddresses: [IPAddress]) {
        let addresses = Set(interfaceAddresses)
        snapshot.withLock { $0.interfaceAddresses = addresses }
    }

    /// Replaces the relay's listening endpoints, as bound (the real port of a `:0` listener).
    /// An unspecified address (`0.0.0.0`, `::`) listens on its port at every local address,
    /// loopback and interface addresses included.
    public func update(listeners: [ListenAddress]) {
        let all = Set(listeners)
        let anyAddressPorts = Set(listeners.filter { Self.isUnspecified($0.host) }.map(\.port))
        let ports = Set(listeners.map(\.port))
        snapshot.withLock {
            $0.listeners = all
            $0.anyAddressPorts = anyAddressPorts
            $0.ports = ports
        }
    }

    /// Whether a connection to `address:port` reaches one of the relay's own listeners,
    /// through any IPv4 address `address` carries too. An unspecified listener is reached
    /// at any local address of either family (a `::` socket usually takes IPv4 too; when it
    /// does not, refusing that port on the host's own addresses costs nothing, since they
    /// are guarded anyway), and the unspecified destination (`0.0.0.0/8`, `::`) reaches
    /// any listener on the port, as Linux connects it to the host itself.
    public func isRelayEndpoint(_ address: IPAddress, port: UInt16) -> Bool {
        let forms = address.policyForms
        return snapshot.withLock { snapshot in
            guard snapshot.ports.contains(port) else { return false }
            return forms.contains { form in
                if Self.isUnspecified(form) { return true }
                if snapshot.listeners.contains(ListenAddress(host: form, port: port)) { return true }
                return snapshot.anyAddressPorts.contains(port)
                    && (form.isLoopback || snapshot.interfaceAddresses.contains(form))
            }
        }
    }

    /// Whether `address`, or an IPv4 address it carries, is one of the host's own
    /// interface addresses.
    public func isOwnAddress(_ address: IPAddress) -> Bool {
        let forms = address.policyForms
        return snapshot.withLock { snapshot in forms.contains { snapshot.interfaceAddresses.contains($0) } }
    }

    /// Whether `cidr` names one of the host's own addresses and nothing else: the only kind
    /// of rule that lifts the guard on it (as only a rule inside guarded space lifts the
    /// guard on loopback), so `server 10.0.0.0/8:*` does not open the relay's own host.
    public func namesOnlyOwnAddress(_ cidr: CIDR) -> Bool {
        cidr.isSingleAddress && isOwnAddress(cidr.base)
    }

    /// `0.0.0.0/8` ("this network", connected to the host itself) or `::`.
    private static func isUnspecified(_ address: IPAddress) -> Bool {
        switch address {
        case .v4(let v4): return v4.value >> 24 == 0
        case .v6(let v6): return v6.high == 0 && v6.low == 0
        }
    }
}
