import Glibc
import RelayCore
import RelayIO

/// One accepted connection on a static `forward` listener: no HTTP, just the registry checks,
/// the open record, and a spliced relay to the one configured server.
///
/// The upstream is opened by `UpstreamOpening`, the machine CONNECT uses too: the open row
/// is written while the upstream connects, the relay starts once both are done, and a close
/// row is written only for an open row that committed, so the trail never shows the end of
/// an attempt whose start it does not hold. A raw TCP client has no answer to wait for, so
/// a failure is a reset at once, its row written when the open row's commit answers.
/// Loop-confined: touched only on its loop's thread, tracked there until the relay takes
/// over; the resolver's and the audit queue's answers come back through a `LoopBound`.
final class ForwardConnection: IdleTracked {
    private enum State {
        /// Accepted; the registry has not decided yet.
        case accepted
        /// The upstream is being opened; `upstream` once connected, until the relay starts.
        case opening(UpstreamOpening, upstream: Int32?)
        /// Ended before relaying with the open row's commit pending: both sockets are closed,
        /// and the commit's answer settles the row.
        case closedAwaitingOpenRow(UpstreamOpening)
        /// Relaying, or ended with its rows written.
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
    private var state = State.accepted
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
        let allowRule: String
        switch settings.session.registry.decide(host: forward.host, port: forward.port) {
        case .deny(let denyRule, let reason):
            rule = denyRule
            return closeAndRecord(.refused, .deny, reason, upstream: nil)
        case .allow(let decided):
            allowRule = decided
        }
        rule = allowRule
        let (opening, action) = UpstreamOpening.start(host: forward.host, port: forward.port, rule: allowRule,
                                                      openRow: .toWrite, checkedBy: settings.session.registry,
                                                      localHost: settings.session.localHost)
        perform(action, opening: opening, upstream: nil)
    }

    // MARK: Outcomes

    private func resolveAnswered(_ result: Result<[SocketAddress], IOError>) {
        switch state {
        case .opening(var opening, let upstream):
            let action: UpstreamOpening.Action
            switch result {
            case .success(let addresses):
                action = opening.resolved(addresses.compactMap { IPAddress(bytes: $0.ipBytes) },
                                          checkedBy: settings.session.registry, localHost: settings.session.localHost)
            case .failure:
                action = opening.handle(.resolveFailed)
            }
            perform(action, opening: opening, upstream: upstream)
        case .done:
            // A resolution cannot be cancelled: it answers after the attempt ended.
            break
        case .accepted, .closedAwaitingOpenRow:
            preconditionFailure("ForwardConnection: resolved in \(state), where no resolution is outstanding")
        }
    }

    private func connectAnswered(_ result: Result<Int32, IOError>) {
        connectAttempt = nil
        let event: UpstreamOpening.Event
        switch result {
        case .success: event = .connected
        case .failure(let error):
            let reason = context.shared.connectFailureReason(error)
            event = .connectFailed(reason)
        }
        switch state {
        case .opening(var opening, let upstream):
            let action = opening.handle(event)
            if case .success(let connected) = result {
                perform(action, opening: opening, upstream: connected)
            } else {
                perform(action, opening: opening, upstream: upstream)
            }
        case .closedAwaitingOpenRow(var opening):
            // The attempt ended with this connect outstanding (closing it cancels it): a
            // connection that completed all the same is closed.
            if opening.handle(event) == .closeLateConnection, case .success(let connected) = result {
                close(connected)
            }
            state = .closedAwaitingOpenRow(opening)
        case .done:
            if case .success(let connected) = result {
                close(connected)
            }
        case .accepted:
            preconditionFailure("ForwardConnection: connect answered in \(state), where none was started")
        }
    }

    private func openRowAnswered(_ committed: Bool) {
        let event: UpstreamOpening.Event = committed ? .openRowCommitted : .openRowFailed
        switch state {
        case .opening(var opening, let upstream):
            perform(opening.handle(event), opening: opening, upstream: upstream)
        case .closedAwaitingOpenRow(var opening):
            perform(opening.handle(event), opening: opening, upstream: nil)
        case .accepted, .done:
            preconditionFailure("ForwardConnection: open row answered in \(state), where none awaits its commit")
        }
    }

    /// Ends the attempt before any byte was relayed (a timeout, shutdown, or a failure
    /// with nobody to answer).
    private func end(_ reason: ReasonCode) {
        switch state {
        case .opening(var opening, let upstream):
            perform(opening.handle(.abandoned(reason)), opening: opening, upstream: upstream)
        case .closedAwaitingOpenRow, .done:
            // Ended already: a timeout racing that ending changes nothing.
            break
        case .accepted:
            preconditionFailure("ForwardConnection: ended for \(reason) before it started")
        }
    }

    // MARK: Actions

    /// Carries out the opening's next step; `upstream` is the connection to relay on, once there.
    private func perform(_ action: UpstreamOpening.Action, opening: UpstreamOpening, upstream: Int32?) {
        switch action {
        case .resolve(let name):
            state = .opening(opening, upstream: upstream)
            let connection = LoopBound(self, on: context.loop)
            context.shared.resolver.resolve(host: name, port: forward.port) { result in
                connection.loop.execute { connection.value.resolveAnswered(result) }
            }
        case .writeOpenRowAndConnect(let address):
            resolved = Endpoint.text(address, forward.port)
            state = .opening(opening, upstream: upstream)
            recordOpen()
            connect(to: address)
        case .connect(let address):
            resolved = Endpoint.text(address, forward.port)
            state = .opening(opening, upstream: upstream)
            connect(to: address)
        case .wait, .ignore, .closeLateConnection:
            state = .opening(opening, upstream: upstream)
        case .failureWaitsForOpenRow(let reason):
            // No status line to wait for: the client learns of the failure by a reset now.
            state = .opening(opening, upstream: upstream)
            end(reason)
        case .relay:
            guard let upstream else { preconditionFailure("ForwardConnection: relay without an upstream") }
            startRelay(upstream: upstream)
        case .refuse(let reason, let refused):
            note(refused)
            closeAndRecord(.refused, .deny, reason, upstream: upstream)
        case .failOpened(let reason, let refused):
            note(refused)
            closeAndRecord(.forwardClose, .allow, reason, upstream: upstream)
        case .closeUnopened(let reason):
            closeAndRecord(.refused, .deny, reason, upstream: upstream)
        case .closeOpened(let reason):
            closeAndRecord(.forwardClose, .allow, reason, upstream: upstream)
        case .closeWhileOpenRowPending:
            closeSockets(upstream: upstream)
            state = .closedAwaitingOpenRow(opening)
            context.shared.connectionClosed(identity)
        case .recordClose(let reason):
            state = .done
            record(.forwardClose, .allow, reason)
        case .recordRefusal(let reason):
            state = .done
            record(.refused, .deny, reason)
        case .writeOpenRow:
            preconditionFailure("ForwardConnection: a forward always connects its upstream")
        }
    }

    /// The open row starts its commit while the upstream connects: the commit costs the
    /// stream no extra wait and the loop no extra wake-up.
    private func recordOpen() {
        let entry = AuditEntry(event: .forwardOpen, decision: .allow, reason: .allowed, target: target,
                               resolved: resolved, rule: rule)
        let connection = LoopBound(self, on: context.loop)
        context.shared.audit.record(entry, identity: identity, batchingOn: context) { committed in
            connection.loop.execute { connection.value.openRowAnswered(committed) }
        }
    }

    private func connect(to address: IPAddress) {
        let socketAddress = SocketAddress(bytes: address.bytes, port: forward.port)
        connectAttempt = TCPConnector.connect(to: socketAddress, on: context.loop,
                                              timeout: settings.timeouts.connect) { [self] result in
            connectAnswered(result)
        }
    }

    private func startRelay(upstream: Int32) {
        state = .done
        context.untrack(self)
        let tunnel = TunnelContext(target: target, resolved: resolved ?? "", rule: rule ?? "", startedAt: startedAt,
                                   host: forward.host)
        // The client's first bytes most likely arrived while the upstream connected.
        TunnelRelay(context: context, clientFD: fd, upstreamFD: upstream, clientLeftover: [],
                    toClientFirst: [], tunnel: tunnel, closeEvent: .forwardClose, identity: identity,
                    tuneSockets: true, readClientFirst: true,
                    inspector: settings.tunnelInspector(rule: tunnel.rule, host: tunnel.host)).start()
    }

    /// A refused address: the rows name it, and the rule that refused it.
    private func note(_ refused: UpstreamOpening.RefusedAddress?) {
        guard let refused else { return }
        rule = refused.rule ?? rule
        resolved = Endpoint.text(refused.address, forward.port)
    }

    /// Ends the attempt before any byte was relayed: closes both sides, then writes its row.
    private func closeAndRecord(_ event: AuditEvent, _ decision: AuditDecision, _ reason: ReasonCode, upstream: Int32?) {
        closeSockets(upstream: upstream)
        state = .done
        record(event, decision, reason)
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

    private func record(_ event: AuditEvent, _ decision: AuditDecision, _ reason: ReasonCode) {
        let entry = AuditEntry(event: event, decision: decision, reason: reason, target: target, resolved: resolved,
                               rule: rule, durationMs: ProxySessionTiming.milliseconds(from: startedAt, to: monotonicNanos()))
        context.shared.audit.record(entry, identity: identity)
    }
}
