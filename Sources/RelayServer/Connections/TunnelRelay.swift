import Glibc
import RelayCore
import RelayIO

/// A raw relay between two connected plain-TCP sockets (an established CONNECT tunnel or a
/// static forward), spliced in the kernel, and its close record.
/// Loop-confined: touched only on its loop's thread, so not `Sendable`; everything it
/// hears comes from its pump on that loop.
final class TunnelRelay: IdleTracked {
    private let context: LoopContext
    private let pump: SplicePump
    private let tunnel: TunnelContext
    private let closeEvent: AuditEvent
    private let identity: SessionIdentity
    /// Bytes the relay itself wrote to the client (the `200`), not payload.
    private let relayBytesToClient: UInt64
    private var abortReason: ReasonCode?
    /// The tunnel's place under `max-tunnels-per-principal`, given back at the end.
    private let quotaPlace: TunnelQuotaPlace?
    /// The client has most likely spoken already: read it at once (`SplicePump.start`).
    private let readClientFirst: Bool

    /// `tuneSockets`: the sockets come straight from accept/connect (static forwards) rather
    /// than from a proxy connection that already tuned them.
    init(context: LoopContext, clientFD: Int32, upstreamFD: Int32, clientLeftover: [UInt8], toClientFirst: [UInt8],
         tunnel: TunnelContext, closeEvent: AuditEvent, identity: SessionIdentity, tuneSockets: Bool = false,
         quotaPlace: TunnelQuotaPlace? = nil, readClientFirst: Bool = false) {
        self.context = context
        self.readClientFirst = readClientFirst
        self.quotaPlace = quotaPlace
        self.tunnel = tunnel
        self.closeEvent = closeEvent
        self.identity = identity
        self.relayBytesToClient = UInt64(toClientFirst.count)
        self.pump = SplicePump(a: clientFD, b: upstreamFD, loop: context.loop, pipes: context.pipes,
                               initialBytesAtoB: clientLeftover, initialBytesBtoA: toClientFirst,
                               tuneSockets: tuneSockets)
    }

    var lastActivity: UInt64 { pump.lastActivity }

    func start() {
        context.track(self)
        // The connection counts (max-connections, the drain at shutdown) until its last
        // descriptor is closed, which a lingering side may delay past the close row.
        let shared = context.shared
        let identity = identity
        pump.start(readAFirst: readClientFirst, completion: { [self] result in
            self.finished(result)
        }, released: {
            shared.connectionClosed(identity)
        })
    }

    func idleTimedOut() {
        abortReason = .idleTimeout
        pump.abort()
    }

    var stalledSince: UInt64? { pump.stalledSince }

    func stallTimedOut() {
        abortReason = .stalled
        pump.abort()
    }

    func abortForShutdown() {
        abortReason = .shutdown
        pump.abort()
    }

    private func finished(_ result: SpliceResult) {
        context.untrack(self)
        let reason: ReasonCode
        switch result.end {
        case .bothClosed: reason = .completed
        case .resetByA: reason = .clientReset
        case .resetByB: reason = .upstreamReset
        case .aborted: reason = abortReason ?? .shutdown
        case .error(let error) where error.errno == EMFILE || error.errno == ENFILE:
            // No pipe could be made for a bulk direction.
            context.shared.noteOutOfDescriptors()
            reason = .outOfDescriptors
        case .error(let error):
            context.shared.logger.log(.notice, "relay-error session=\(identity.session) \(error)")
            reason = .internalError
        }
        let down = result.bytesBtoA >= relayBytesToClient ? result.bytesBtoA - relayBytesToClient : 0
        let entry = AuditEntry(event: closeEvent, decision: .allow, reason: reason, target: tunnel.target,
                               resolved: tunnel.resolved, rule: tunnel.rule, bytesUp: Int64(result.bytesAtoB),
                               bytesDown: Int64(down),
                               durationMs: ProxySessionTiming.milliseconds(from: tunnel.startedAt, to: monotonicNanos()),
                               principal: tunnel.principal?.name, scheme: tunnel.principal?.scheme)
        // The place is free before the close row can be read, so whoever sees the row may
        // open the next tunnel at once.
        quotaPlace?.release()
        context.shared.audit.record(entry, identity: identity)
    }
}
