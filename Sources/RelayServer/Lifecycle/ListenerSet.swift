import Glibc
import RelayCore
import RelayIO
import Synchronization

/// The relay's listening sockets as the config names them: bound at start and, on reload,
/// brought in line with the new config: new ones bound, removed ones closed (the
/// connections they accepted go on), the rest kept with their sockets, so a reload never
/// leaves open a port the config no longer names and never drops a client in a backlog.
final class ListenerSet: Sendable {
    /// What a listener speaks: HTTP proxy, HTTP proxy inside TLS, or a static forward's raw TCP.
    enum Kind: Equatable, Sendable {
        case proxy
        case tlsProxy
        case forward

        /// The word the ready line and reload refusals use.
        var label: String {
            switch self {
            case .proxy: "proxy"
            case .tlsProxy: "tls"
            case .forward: "forward"
            }
        }
    }

    /// Where a forward listener relays to; a reload that changes the `forward` line changes
    /// it in place, for the connections accepted from then on.
    final class ForwardRoute: Sendable {
        private let current: Mutex<(directive: ForwardDirective, target: String)>

        init(_ directive: ForwardDirective) {
            current = Mutex((directive, Endpoint.text(directive.host, directive.port)))
        }

        var value: (directive: ForwardDirective, target: String) { current.withLock { $0 } }

        func update(_ directive: ForwardDirective) {
            current.withLock { $0 = (directive, Endpoint.text(directive.host, directive.port)) }
        }
    }

    /// One listening socket and what the config line made it.
    struct Entry: Sendable {
        let kind: Kind
        /// The address as written (port 0 stays 0): what a reload matches on.
        let configured: ListenAddress
        let listener: TCPListener
        /// The forward's target, for `.forward` entries.
        let route: ForwardRoute?
        /// The `listen … tls` line, for `.tlsProxy` entries: each accepted connection looks
        /// up the current context by it (`TLSContexts.listener`).
        var tlsKey: TLSListenerKey? = nil

        /// `127.0.0.1:3128`, `tls:127.0.0.1:3129` or `forward:127.0.0.1:2222`: the ready
        /// line's spelling.
        var name: String {
            kind == .proxy ? listener.localAddress.description : "\(kind.label):\(listener.localAddress.description)"
        }
    }

    /// What a reload does to the listeners, prepared (new sockets bound) before any of it
    /// takes effect.
    struct Change {
        /// The entries in config order once the change is done.
        var entries: [Entry]
        var added: [Entry]
        var removed: [Entry]
        /// Forwards kept whose target changed: (listener, old target, new target).
        var retargeted: [(name: String, from: String, to: String)]
        /// Each kept forward's directive from the new config, set on `commit`.
        fileprivate var routes: [(ForwardRoute, ForwardDirective)] = []
    }

    private let entries = Mutex<[Entry]>([])

    /// Every listener now, in config order (proxy listeners first, then TLS proxies, then forwards).
    var all: [Entry] { entries.withLock { $0 } }

    /// Binds every listener `config` names; throws (closing what it bound) if one fails.
    func bindAll(_ config: RelayConfig) throws {
        commit(try prepare(config, current: []))
    }

    /// Binds what `config` adds and works out what it keeps and removes; nothing takes
    /// effect until `commit`. A kept TLS listener keeps its key (the nth socket of an
    /// address matches the nth line of it) and so finds the reload's new context. Throws,
    /// with nothing changed and whatever it bound closed, when a new listener cannot be
    /// bound or an address changes kind (proxy, TLS proxy, forward), which
    /// would need the old socket closed before the new one is bound.
    func prepare(_ config: RelayConfig) throws -> Change {
        try prepare(config, current: all)
    }

    /// Drops a prepared change that will not be made: closes the listeners it bound.
    func abandon(_ change: Change) {
        for entry in change.added { entry.listener.stop() }
    }

    /// Makes `change` the listener set. The caller starts the added and stops the removed.
    func commit(_ change: Change) {
        for (route, directive) in change.routes { route.update(directive) }
        entries.withLock { $0 = change.entries }
    }

    private func prepare(_ config: RelayConfig, current: [Entry]) throws -> Change {
        let tlsKeys = TLSListenerKey.keys(config.tlsListeners)
        let wanted: [(Kind, ListenAddress, ForwardDirective?, TLSListenerKey?)] = config.listeners.map { (.proxy, $0, nil, nil) }
            + tlsKeys.map { (.tlsProxy, $0.address, nil, $0) }
            + config.forwards.map { (.forward, $0.listen, $0, nil) }
        var unmatched = current
        var change = Change(entries: [], added: [], removed: [], retargeted: [])
        do {
            for (kind, address, forward, tlsKey) in wanted {
                if let index = unmatched.firstIndex(where: { $0.kind == kind && $0.configured == address }) {
                    let kept = unmatched.remove(at: index)
                    if let forward, let route = kept.route {
                        let before = route.value.target
                        let after = Endpoint.text(forward.host, forward.port)
                        if before != after { change.retargeted.append((kept.name, before, after)) }
                        change.routes.append((route, forward))
                    }
                    change.entries.append(kept)
                    continue
                }
                if address.port != 0, let other = unmatched.first(where: { $0.configured == address }) {
                    throw ReloadRefusal("\(address) changes from \(other.kind.label) to \(kind.label) listener: restart to apply")
                }
                let entry = Entry(kind: kind, configured: address, listener: try Self.bind(address),
                                  route: forward.map(ForwardRoute.init), tlsKey: tlsKey)
                change.added.append(entry)
                change.entries.append(entry)
            }
        } catch {
            for entry in change.added { entry.listener.stop() }
            throw error
        }
        change.removed = unmatched
        return change
    }

    private static func bind(_ address: ListenAddress) throws -> TCPListener {
        guard let socketAddress = SocketAddress(ip: address.host.description, port: address.port) else {
            throw IOError("listen \(address)", errno: EINVAL)
        }
        return try TCPListener.bind(socketAddress)
    }
}
