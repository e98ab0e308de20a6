import Glibc
import RelayCore
import RelayIO

/// One accepted connection on a static `forward` listener: no HTTP, just the registry checks,
/// the open record, and a spliced relay to the one configured server.
/// Loop-confined: touched only on its loop's thread.
final class ForwardConnection: @unchecked Sendable {
    private let context: LoopContext
    private let settings: RuntimeSettings
    private let forward: ForwardDirective
    private let identity: SessionIdentity
    private let fd: Int32
    private let startedAt = monotonicNanos()
    /// `host:port` of the forward, formatted once per listener.
    private let target: String
    private var candidates: ArraySlice<IPAddress> = []
    private var rule = ""
    private var connectAttempt: ConnectAttempt?
    /// The address being connected to, then the one connected.
    private var resolved = ""
    /// The connected upstream, until the relay takes it; -1 before.
    private var upstreamFD: Int32 = -1
    /// The open row is durable: with the upstream connected, the relay may start.
    private var openCommitted = false
    /// The relay started, or the connection was refused or failed: later answers are ignored.
    private var finished = false

    init(context: LoopContext, fd: Int32, forward: ForwardDirective, target: String, identity: SessionIdentity) {
        self.context = context
        self.settings = context.shared.settings
        self.forward = forward
        self.identity = identity
        self.fd = fd
        self.target = target
    }

    func start() {
        // Checked again per connection: a reload may have unregistered the target since startup.
        switch settings.session.registry.decide(host: forward.host, port: forward.port) {
        case .deny(let denyRule, let reason):
            return refuse(reason, rule: denyRule, resolved: nil)
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
                    switch result {
                    case .success(let addresses): check(addresses.compactMap { IPAddress(bytes: $0.ipBytes) })
                    case .failure: refuse(.resolveFailed, rule: rule, resolved: nil)
                    }
                }
            }
        }
    }

    private func check(_ addresses: [IPAddress]) {
        let result = settings.session.registry.checkAll(addresses, port: forward.port, allowRule: rule)
        if let refusal = result.refusal {
            return refuse(refusal.reason, rule: refusal.rule ?? rule,
                          resolved: ProxySession.endpoint(refusal.address, forward.port))
        }
        guard let first = result.ordered.first else {
            return refuse(.resolveFailed, rule: rule, resolved: nil)
        }
        candidates = result.ordered[...]
        // The open row is written while the upstream connects (as for CONNECT): the relay
        // starts when both are done, so the commit costs the stream no extra wait and the
        // loop no extra wake-up. A connect that then fails becomes that row's close row.
        resolved = ProxySession.endpoint(first, forward.port)
        recordOpen()
        connectNext(lastFailure: .upstreamUnreachable)
    }

    private func recordOpen() {
        let entry = AuditEntry(event: .forwardOpen, decision: .allow, reason: .allowed, target: target,
                               resolved: resolved, rule: rule)
        let loop = context.loop
        context.shared.audit.record(entry, identity: identity, batchingOn: context) { [self] committed in
            loop.execute { [self] in openRecorded(committed) }
        }
    }

    private func connectNext(lastFailure: ReasonCode) {
        guard let address = candidates.popFirst() else {
            return failOpened(lastFailure)
        }
        resolved = ProxySession.endpoint(address, forward.port)
        let socketAddress = SocketAddress(bytes: address.bytes, port: forward.port)
        connectAttempt = TCPConnector.connect(to: socketAddress, on: context.loop,
                                              timeout: settings.timeouts.connect) { [self] result in
            connectAttempt = nil
            switch result {
            case .success(let fd):
                upstreamFD = fd
                startRelayIfReady()
            case .failure(let error):
                connectNext(lastFailure: ClientConnection.reason(for: error))
            }
        }
    }

    private func openRecorded(_ committed: Bool) {
        guard !finished else { return }
        guard committed else {
            // Fail closed: without its open record nothing is relayed.
            connectAttempt?.cancel()
            connectAttempt = nil
            if upstreamFD >= 0 { close(upstreamFD) }
            upstreamFD = -1
            return refuse(.internalError, rule: rule, resolved: resolved)
        }
        openCommitted = true
        startRelayIfReady()
    }

    private func startRelayIfReady() {
        guard openCommitted, upstreamFD >= 0, !finished else { return }
        finished = true
        let tunnel = TunnelContext(target: target, resolved: resolved, rule: rule, startedAt: startedAt)
        TunnelRelay(context: context, clientFD: fd, upstreamFD: upstreamFD, clientLeftover: [],
                    toClientFirst: [], tunnel: tunnel, closeEvent: .forwardClose, identity: identity,
                    setNoDelay: true).start()
        upstreamFD = -1
    }

    /// Every address failed after the open row was written: its close row says why.
    private func failOpened(_ reason: ReasonCode) {
        guard !finished else { return }
        finished = true
        let entry = AuditEntry(event: .forwardClose, decision: .allow, reason: reason, target: target,
                               resolved: resolved, rule: rule,
                               durationMs: ProxySessionTiming.milliseconds(from: startedAt, to: monotonicNanos()))
        context.shared.audit.record(entry, identity: identity)
        close(fd)
        context.shared.connectionClosed()
    }

    /// A raw TCP client has no status line to read: the refusal is the audit row and a close.
    private func refuse(_ reason: ReasonCode, rule: String?, resolved: String?) {
        finished = true
        let entry = AuditEntry(event: .refused, decision: .deny, reason: reason, target: target, resolved: resolved,
                               rule: rule, durationMs: ProxySessionTiming.milliseconds(from: startedAt, to: monotonicNanos()))
        context.shared.audit.record(entry, identity: identity)
        close(fd)
        context.shared.connectionClosed()
    }
}
