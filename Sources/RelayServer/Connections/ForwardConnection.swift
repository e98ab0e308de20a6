import Glibc
import RelayCore
import RelayIO

/// One accepted connection on a static `forward` listener: no HTTP, just the registry checks,
/// the open record, and a spliced relay to the one configured server.
///
/// The open row is written while the upstream connects (as for CONNECT), and the relay starts
/// once both are done. A close row is written only for an open row that committed, so the
/// trail never shows the end of an attempt whose start it does not hold.
/// Loop-confined: touched only on its loop's thread; tracked there until the relay takes over.
final class ForwardConnection: @unchecked Sendable, IdleTracked {
    private enum State {
        /// Registry checks and name resolution: no row written yet.
        case checking
        /// The open row is written and the upstream connecting; `committed` once the row is
        /// stored, `upstream` once connected. The relay starts when both are there.
        case opening(committed: Bool, upstream: Int32?)
        /// Ended before relaying while the open row's commit was pending: the row for this
        /// reason waits for the commit's answer (a close row, or a refusal if not stored).
        case endedBeforeCommit(ReasonCode)
        /// Relaying, or ended with its rows written: later answers change nothing.
        case done
    }

    private let context: LoopContext
    private let settings: RuntimeSettings
    private let forward: ForwardDirective
    private let identity: SessionIdentity
    private let fd: Int32
    private let startedAt = monotonicNanos()
    /// `host:port` of the forward, formatted once per listener.
    private let target: String
    private var state = State.checking
    private var candidates: ArraySlice<IPAddress> = []
    private var rule: String?
    /// The address being connected to, then the one connected (or the one refused).
    private var resolved: String?
    private var connectAttempt: ConnectAttempt?

    init(context: LoopContext, fd: Int32, forward: ForwardDirective, target: String, identity: SessionIdentity) {
        self.context = context
        self.settings = context.shared.settings
        self.forward = forward
        self.identity = identity
        self.fd = fd
        self.target = target
    }

    /// Nothing moves before the relay starts: the attempt is as old as the connection.
    var lastActivity: UInt64 { startedAt }

    func idleTimedOut() {
        end(.idleTimeout)
    }


    /// The drain deadline passed while this attempt connected or waited for its commit (a
    /// pending commit's answer still settles the row before the trail closes).
    func abortForShutdown() {
        end(.shutdown)
    }

    func start() {
        context.track(self)
        // Checked again per connection: a reload may have unregistered the target since startup.
        switch settings.session.registry.decide(host: forward.host, port: forward.port) {
        case .deny(let denyRule, let reason):
            rule = denyRule
            return end(reason)
        case .allow(let allowRule):
            rule = allowRule
        }
        switch forward.host {
        case .ipv4(let address): check([.v4(address)])
        case .ipv6(let address): check([.v6(address)])
        case .name(let name):
            let loop = context.loop
            context.shared.resolver.resolve(host: name, port: forward.port) { [self] result in
                loop.execute { [self] in
                    guard case .checking = state else { return }
                    switch result {
                    case .success(let addresses): check(addresses.compactMap { IPAddress(bytes: $0.ipBytes) })
                    case .failure: end(.resolveFailed)
                    }
                }
            }
        }
    }

    private func check(_ addresses: [IPAddress]) {
        let result = settings.session.registry.checkAll(addresses, port: forward.port, allowRule: rule ?? "", localHost: settings.session.localHost)
        if let refusal = result.refusal {
            rule = refusal.rule ?? rule
            resolved = Endpoint.text(refusal.address, forward.port)
            return end(refusal.reason)
        }
        guard let first = result.ordered.first else {
            return end(.resolveFailed)
        }
        candidates = result.ordered[...]
        resolved = Endpoint.text(first, forward.port)
        recordOpen()
        connectNext(lastFailure: .upstreamUnreachable)
    }

    /// The open row starts its commit while the upstream connects: the commit costs the
    /// stream no extra wait and the loop no extra wake-up.
    private func recordOpen() {
        state = .opening(committed: false, upstream: nil)
        let entry = AuditEntry(event: .forwardOpen, decision: .allow, reason: .allowed, target: target,
                               resolved: resolved, rule: rule)
        let loop = context.loop
        context.shared.audit.record(entry, identity: identity, batchingOn: context) { [self] committed in
            loop.execute { [self] in openRecorded(committed) }
        }
    }

    private func connectNext(lastFailure: ReasonCode) {
        guard let address = candidates.popFirst() else {
            return end(lastFailure)
        }
        resolved = Endpoint.text(address, forward.port)
        let socketAddress = SocketAddress(bytes: address.bytes, port: forward.port)
        connectAttempt = TCPConnector.connect(to: socketAddress, on: context.loop,
                                              timeout: settings.timeouts.connect) { [self] result in
            connectAttempt = nil
            switch result {
            case .success(let connected):
                // An attempt that ended cancelled its connect; a late success is closed.
                guard case .opening(let committed, nil) = state else {
                    close(connected)
                    return
                }
                state = .opening(committed: committed, upstream: connected)
                startRelayIfReady()
            case .failure(let error):
                connectNext(lastFailure: context.shared.connectFailureReason(error))
            }
        }
    }

    private func openRecorded(_ committed: Bool) {
        switch state {
        case .endedBeforeCommit(let reason):
            // The attempt ended first; its row waited for this answer.
            state = .done
            committed ? recordClose(reason) : recordRefusal(.internalError)
        case .opening(_, let upstream):
            guard committed else {
                // Fail closed: without its open record nothing is relayed, and nothing refers to it.
                closeSockets(upstream: upstream)
                state = .done
                recordRefusal(.internalError)
                return context.shared.connectionClosed(identity)
            }
            state = .opening(committed: true, upstream: upstream)
            startRelayIfReady()
        case .checking, .done:
            break
        }
    }

    private func startRelayIfReady() {
        guard case .opening(true, let upstream?) = state else { return }
        state = .done
        context.untrack(self)
        let tunnel = TunnelContext(target: target, resolved: resolved ?? "", rule: rule ?? "", startedAt: startedAt)
        // The client's first bytes most likely arrived while the upstream connected.
        TunnelRelay(context: context, clientFD: fd, upstreamFD: upstream, clientLeftover: [],
                    toClientFirst: [], tunnel: tunnel, closeEvent: .forwardClose, identity: identity,
                    tuneSockets: true, readClientFirst: true).start()
    }

    /// Ends the attempt before any byte was relayed: closes both sides, then records why (or,
    /// while the open row is pending, once its commit answers).
    private func end(_ reason: ReasonCode) {
        switch state {
        case .checking:
            closeSockets(upstream: nil)
            state = .done
            recordRefusal(reason)
        case .opening(let committed, let upstream):
            closeSockets(upstream: upstream)
            if committed {
                state = .done
                recordClose(reason)
            } else {
                state = .endedBeforeCommit(reason)
            }
        case .endedBeforeCommit, .done:
            return
        }
        // After the row, as everywhere: whoever sees the count drop finds the row queued.
        context.shared.connectionClosed(identity)
    }

    private func closeSockets(upstream: Int32?) {
        context.untrack(self)
        connectAttempt?.cancel()
        connectAttempt = nil
        if let upstream { close(upstream) }
        // A raw TCP client has no status line to read: a reset is its refusal, where a FIN
        // would read as an empty but complete stream.
        closeWithReset(fd)
    }

    private func recordRefusal(_ reason: ReasonCode) {
        record(.refused, .deny, reason)
    }

    /// The close row of an opened attempt that never relayed a byte.
    private func recordClose(_ reason: ReasonCode) {
        record(.forwardClose, .allow, reason)
    }

    private func record(_ event: AuditEvent, _ decision: AuditDecision, _ reason: ReasonCode) {
        let entry = AuditEntry(event: event, decision: decision, reason: reason, target: target, resolved: resolved,
                               rule: rule, durationMs: ProxySessionTiming.milliseconds(from: startedAt, to: monotonicNanos()))
        context.shared.audit.record(entry, identity: identity)
    }
}
