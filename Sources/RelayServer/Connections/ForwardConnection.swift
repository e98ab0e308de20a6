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
    /// Where the open row stands.
    private enum OpenRow {
        case unwritten
        case pending
        case committed
    }

    private let context: LoopContext
    private let settings: RuntimeSettings
    private let forward: ForwardDirective
    private let identity: SessionIdentity
    private let fd: Int32
    private let startedAt = monotonicNanos()
    /// `host:port` of the forward, formatted once per listener.
    private let target: String
    private var candidates: ArraySlice<IPAddress> = []
    private var rule: String?
    /// The address being connected to, then the one connected (or the one refused).
    private var resolved: String?
    private var connectAttempt: ConnectAttempt?
    /// The connected upstream, until the relay takes it; -1 before.
    private var upstreamFD: Int32 = -1
    private var openRow = OpenRow.unwritten
    /// Every connect failed while the open row was still pending: its close row, with this
    /// reason, waits for the commit's answer.
    private var endedBeforeCommit: ReasonCode?
    /// The relay started or the attempt ended: later answers only settle the trail.
    private var finished = false

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
                    guard !finished else { return }
                    switch result {
                    case .success(let addresses): check(addresses.compactMap { IPAddress(bytes: $0.ipBytes) })
                    case .failure: end(.resolveFailed)
                    }
                }
            }
        }
    }

    private func check(_ addresses: [IPAddress]) {
        let result = settings.session.registry.checkAll(addresses, port: forward.port, allowRule: rule ?? "")
        if let refusal = result.refusal {
            rule = refusal.rule ?? rule
            resolved = ProxySession.endpoint(refusal.address, forward.port)
            return end(refusal.reason)
        }
        guard let first = result.ordered.first else {
            return end(.resolveFailed)
        }
        candidates = result.ordered[...]
        resolved = ProxySession.endpoint(first, forward.port)
        recordOpen()
        connectNext(lastFailure: .upstreamUnreachable)
    }

    /// The open row starts its commit while the upstream connects: the commit costs the
    /// stream no extra wait and the loop no extra wake-up.
    private func recordOpen() {
        openRow = .pending
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
        resolved = ProxySession.endpoint(address, forward.port)
        let socketAddress = SocketAddress(bytes: address.bytes, port: forward.port)
        connectAttempt = TCPConnector.connect(to: socketAddress, on: context.loop,
                                              timeout: settings.timeouts.connect) { [self] result in
            connectAttempt = nil
            switch result {
            case .success(let connected):
                upstreamFD = connected
                startRelayIfReady()
            case .failure(let error):
                connectNext(lastFailure: ClientConnection.reason(for: error))
            }
        }
    }

    private func openRecorded(_ committed: Bool) {
        if finished {
            // The attempt ended first; its row waited for this answer.
            guard let reason = endedBeforeCommit else { return }
            endedBeforeCommit = nil
            return committed ? recordClose(reason) : recordRefusal(.internalError)
        }
        guard committed else {
            // Fail closed: without its open record nothing is relayed, and nothing refers to it.
            openRow = .unwritten
            return end(.internalError)
        }
        openRow = .committed
        startRelayIfReady()
    }

    private func startRelayIfReady() {
        guard openRow == .committed, upstreamFD >= 0, !finished else { return }
        finished = true
        context.untrack(self)
        let tunnel = TunnelContext(target: target, resolved: resolved ?? "", rule: rule ?? "", startedAt: startedAt)
        // The client's first bytes most likely arrived while the upstream connected.
        TunnelRelay(context: context, clientFD: fd, upstreamFD: upstreamFD, clientLeftover: [],
                    toClientFirst: [], tunnel: tunnel, closeEvent: .forwardClose, identity: identity,
                    setNoDelay: true, readClientFirst: true).start()
        upstreamFD = -1
    }

    /// Ends the attempt before any byte was relayed: closes both sides, then records why (or,
    /// while the open row is pending, once its commit answers). A raw TCP client has no
    /// status line to read: the close is its answer.
    private func end(_ reason: ReasonCode) {
        guard !finished else { return }
        finished = true
        context.untrack(self)
        connectAttempt?.cancel()
        connectAttempt = nil
        if upstreamFD >= 0 {
            close(upstreamFD)
            upstreamFD = -1
        }
        close(fd)
        switch openRow {
        case .unwritten: recordRefusal(reason)
        case .committed: recordClose(reason)
        case .pending: endedBeforeCommit = reason
        }
        // After the row, as everywhere: whoever sees the count drop finds the row queued.
        context.shared.connectionClosed()
    }

    private func recordRefusal(_ reason: ReasonCode) {
        let entry = AuditEntry(event: .refused, decision: .deny, reason: reason, target: target, resolved: resolved,
                               rule: rule, durationMs: ProxySessionTiming.milliseconds(from: startedAt, to: monotonicNanos()))
        context.shared.audit.record(entry, identity: identity)
    }

    /// The close row of an opened attempt that never relayed a byte.
    private func recordClose(_ reason: ReasonCode) {
        let entry = AuditEntry(event: .forwardClose, decision: .allow, reason: reason, target: target,
                               resolved: resolved, rule: rule,
                               durationMs: ProxySessionTiming.milliseconds(from: startedAt, to: monotonicNanos()))
        context.shared.audit.record(entry, identity: identity)
    }
}
