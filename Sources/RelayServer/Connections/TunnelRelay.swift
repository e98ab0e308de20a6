import Glibc
import RelayCore
import RelayIO

/// A raw relay between a client and a plain-TCP upstream (an established CONNECT tunnel or
/// a static forward), and its close record: spliced in the kernel when the client is a
/// plain socket too; through `TLSRelayPump` when it came in on an HTTPS listener, whose
/// TLS the kernel cannot see into.
///
/// A rule's TLS policy is read from the tunnel's first bytes. A TLS client's tunnel is read
/// by a `TunnelInspection` first. A plain client's tunnel starts spliced, with the pump's
/// first copied read of each side judged by the inspector (a `SpliceGate`): most such
/// tunnels do not carry TLS, and a first byte that is not a handshake (or a server that
/// speaks first) settles `tunnel-tls=any` at once, at no cost to the splice. Anything
/// else (a ClientHello, bytes too few to classify) hands the sockets and what was read to
/// a `TunnelInspection`, exactly as if it had read them itself. Under
/// `tunnel-tls=required` the inspection runs from the start: its timer runs from the
/// moment the tunnel is established.
///
/// Loop-confined: touched only on its loop's thread, so not `Sendable`; everything it
/// hears comes from its pump on that loop.
final class TunnelRelay: IdleTracked {
    /// The client side as the proxy connection hands it on.
    enum Client {
        case plain(Int32)
        /// A TLS stream whose handshake is done; its socket is still watched by the stream.
        case tls(TLSStream)
    }

    /// Where the tunnel is: its first round trip read by a `TunnelInspection`, then spliced
    /// (plain client) or pumped (TLS client).
    private enum Phase {
        case inspecting(TunnelInspection)
        /// Made, or running; gated while `gateInspector` is set.
        case splicing(SplicePump)
        /// A TLS client's relay, made but not yet started (no inspection), or running.
        case pumping(TLSRelayPump)
        case ended
    }

    private let context: LoopContext
    private let tunnel: TunnelContext
    private let closeEvent: AuditEvent
    private let identity: SessionIdentity
    private let clientFD: Int32
    private let upstreamFD: Int32
    private let tuneSockets: Bool
    private var phase: Phase
    private var abortReason: ReasonCode?
    /// The tunnel's place under `max-tunnels-per-principal`, given back at the end.
    private let quotaPlace: TunnelQuotaPlace?
    /// The client has most likely spoken already: read it at once (`SplicePump.start`).
    private let readClientFirst: Bool
    private let clientLeftover: [UInt8]
    private let toClientFirst: [UInt8]
    /// Payload passed on during inspection, and what the relay after it sends first that is
    /// not its payload to count (the relay's own `200`, judged bytes the kernel had not taken
    /// yet), so the close row counts each byte once.
    private var inspectedUp: UInt64 = 0
    private var inspectedDown: UInt64 = 0
    private var handedUp: UInt64 = 0
    private var handedDown: UInt64
    /// What inspection read of the tunnel's TLS, for the close row.
    private var tlsFacts: TLSTunnelFacts?
    /// The rule's inspector, not yet fed, while a plain client's splice is gated.
    private var gateInspector: TLSTunnelInspector?
    /// A TLS client and the upstream's stream beside it, for the `TLSRelayPump` path.
    private let clientTLS: TLSStream?
    /// The upstream socket once something reads it through a stream (inspection, the TLS
    /// path), and a plain client's socket while inspection reads it: the splice relay takes
    /// their fds over detached, or their handlers would outlive the inspection and fire on
    /// the pump's fds.
    private var upstreamStream: StreamSocket?
    private var inspectedPlainClient: StreamSocket?

    /// A relay whose client is a plain descriptor.
    convenience init(context: LoopContext, clientFD: Int32, upstreamFD: Int32, clientLeftover: [UInt8],
                     toClientFirst: [UInt8], tunnel: TunnelContext, closeEvent: AuditEvent, identity: SessionIdentity,
                     tuneSockets: Bool = false, quotaPlace: TunnelQuotaPlace? = nil, readClientFirst: Bool = false,
                     inspector: TLSTunnelInspector? = nil) {
        self.init(context: context, client: .plain(clientFD), upstreamFD: upstreamFD, clientLeftover: clientLeftover,
                  toClientFirst: toClientFirst, tunnel: tunnel, closeEvent: closeEvent, identity: identity,
                  tuneSockets: tuneSockets, quotaPlace: quotaPlace, readClientFirst: readClientFirst, inspector: inspector)
    }

    /// `tuneSockets`: the sockets come straight from accept/connect (static forwards) rather
    /// than from a proxy connection that already tuned them. `inspection`: the rule's TLS
    /// policy, read from the first round trip before the tunnel is spliced; nil relays at once.
    init(context: LoopContext, client: Client, upstreamFD: Int32, clientLeftover: [UInt8], toClientFirst: [UInt8],
         tunnel: TunnelContext, closeEvent: AuditEvent, identity: SessionIdentity, tuneSockets: Bool = false,
         quotaPlace: TunnelQuotaPlace? = nil, readClientFirst: Bool = false, inspector: TLSTunnelInspector? = nil) {
        self.context = context
        self.readClientFirst = readClientFirst
        self.quotaPlace = quotaPlace
        self.tunnel = tunnel
        self.closeEvent = closeEvent
        self.identity = identity
        switch client {
        case .plain(let fd):
            clientFD = fd
            clientTLS = nil
        case .tls(let stream):
            clientFD = stream.socket.fd
            clientTLS = stream
        }
        self.upstreamFD = upstreamFD
        self.tuneSockets = tuneSockets
        self.clientLeftover = clientLeftover
        self.toClientFirst = toClientFirst
        self.handedDown = UInt64(toClientFirst.count)
        if clientTLS != nil {
            upstreamStream = StreamSocket(fd: upstreamFD, loop: context.loop)
        }
        var inspector = inspector
        if clientTLS == nil, let rule = inspector {
            switch Self.plainClientStart(rule, clientLeftover: clientLeftover) {
            case .inspect:
                break
            case .gate:
                gateInspector = rule
                inspector = nil
            case .relay(let facts):
                tlsFacts = facts
                inspector = nil
            }
        }
        if let inspector {
            let plainClient = clientTLS == nil ? StreamSocket(fd: clientFD, loop: context.loop) : nil
            let client: any RelayStream = clientTLS ?? plainClient!
            let upstream = upstreamStream ?? StreamSocket(fd: upstreamFD, loop: context.loop)
            inspectedPlainClient = plainClient
            upstreamStream = upstream
            if tuneSockets {
                plainClient?.tuneForRelay()
                upstream.tuneForRelay()
            }
            phase = .inspecting(TunnelInspection(loop: context.loop, scratch: context.scratch, client: client,
                                                 upstream: upstream, inspector: inspector,
                                                 settings: context.shared.settings.tlsInspection))
        } else if let clientTLS, let upstreamStream {
            phase = .pumping(Self.tlsPump(client: clientTLS, upstream: upstreamStream, context: context,
                                          toUpstream: clientLeftover, toClient: toClientFirst))
        } else {
            phase = .splicing(SplicePump(a: clientFD, b: upstreamFD, loop: context.loop, pipes: context.pipes,
                                         initialBytesAtoB: clientLeftover, initialBytesBtoA: toClientFirst,
                                         tuneSockets: tuneSockets))
        }
    }

    /// How a plain client's tunnel under a TLS policy starts.
    private enum PlainClientStart {
        /// Inspection from the start.
        case inspect
        /// Spliced, its first reads judged.
        case gate
        /// Spliced: the bytes behind the CONNECT settled the policy, as `facts` say.
        case relay(TLSTunnelFacts)
    }

    /// How much of a side's first bytes is judged. The inspector decides alike however its
    /// input is split (see `TLSTunnelInspector`) and, once finished, relays the rest raw: a
    /// prefix it finishes on settles the whole read, and a first byte that is not a
    /// handshake settles it at once. The rest is not copied through the inspector.
    private static let judgedPrefix = 16

    /// A `tunnel-tls=required` inspector's timer runs from now, so only a full inspection
    /// can serve it. Bytes behind the CONNECT are judged at once: the splice needs no gate
    /// when they settle the policy.
    private static func plainClientStart(_ rule: TLSTunnelInspector, clientLeftover: [UInt8]) -> PlainClientStart {
        var inspector = rule
        guard inspector.start().isEmpty else { return .inspect }
        guard !clientLeftover.isEmpty else { return .gate }
        let passes = clientLeftover.withUnsafeBytes { leftover in
            let bytes = UnsafeRawBufferPointer(rebasing: leftover.prefix(judgedPrefix))
            return passesUntouched(inspector.clientBytes(bytes), bytes, from: .a)
        }
        return passes ? .relay(inspector.facts) : .inspect
    }

    /// True when the inspector finished on one side's first bytes at once, passing them on
    /// unchanged: nothing held, nothing refused, no timer.
    private static func passesUntouched(_ actions: [TLSInspectorAction], _ bytes: UnsafeRawBufferPointer?,
                                        from side: SpliceGate.Side) -> Bool {
        guard case .finished? = actions.last else { return false }
        guard let bytes else { return actions.count == 1 }
        guard actions.count == 2 else { return false }
        switch (actions[0], side) {
        case (.toServer(let passed), .a), (.toClient(let passed), .b): return passed.elementsEqual(bytes)
        default: return false
        }
    }

    /// The gate's judge: a copy of the rule's inspector is fed the read; the inspection
    /// takes over unless it finishes at once passing it on untouched.
    private func judgeFirstRead(from side: SpliceGate.Side, _ read: SpliceGate.Read) -> SpliceGate.Verdict {
        guard var inspector = gateInspector else { return .relay }
        let actions: [TLSInspectorAction]
        let bytes: UnsafeRawBufferPointer?
        switch (side, read) {
        case (.a, .bytes(let read)):
            let prefix = UnsafeRawBufferPointer(rebasing: read.prefix(Self.judgedPrefix))
            (actions, bytes) = (inspector.clientBytes(prefix), prefix)
        case (.b, .bytes(let read)):
            let prefix = UnsafeRawBufferPointer(rebasing: read.prefix(Self.judgedPrefix))
            (actions, bytes) = (inspector.serverBytes(prefix), prefix)
        case (.a, .endOfStream): (actions, bytes) = (inspector.clientEOF(), nil)
        case (.b, .endOfStream): (actions, bytes) = (inspector.serverEOF(), nil)
        }
        guard Self.passesUntouched(actions, bytes, from: side) else { return .handOver }
        gateInspector = nil
        tlsFacts = inspector.facts
        return .relay
    }

    /// The gated splice gave its sockets back: inspection reads on from where it stopped.
    private func inspectHandedOver(_ handOver: SpliceHandOver) {
        guard let inspector = gateInspector else { preconditionFailure("a hand-over comes from a gated splice") }
        precondition(handOver.owedToB.isEmpty, "a gated splice is given nothing for the upstream")
        gateInspector = nil
        let client = StreamSocket(fd: handOver.a, loop: context.loop)
        let upstream = StreamSocket(fd: handOver.b, loop: context.loop)
        inspectedPlainClient = client
        upstreamStream = upstream
        let inspection = TunnelInspection(loop: context.loop, scratch: context.scratch, client: client, upstream: upstream,
                                          inspector: inspector, settings: context.shared.settings.tlsInspection)
        phase = .inspecting(inspection)
        inspection.start(toClientFirst: handOver.owedToA, clientLeftover: handOver.readFromA,
                         serverLeftover: handOver.readFromB) { [self] outcome in
            inspected(outcome, by: inspection)
        }
    }

    var lastActivity: UInt64 {
        switch phase {
        case .inspecting(let inspection): return inspection.lastActivity
        case .splicing(let pump): return pump.lastActivity
        case .pumping(let pump): return pump.lastActivity
        case .ended: return monotonicNanos()
        }
    }

    func start() {
        context.track(self)
        switch phase {
        case .inspecting(let inspection):
            inspection.start(toClientFirst: toClientFirst, clientLeftover: clientLeftover) { [self] outcome in
                inspected(outcome, by: inspection)
            }
        case .splicing(let pump):
            splice(pump)
        case .pumping(let pump):
            pumpTLS(pump)
        case .ended:
            preconditionFailure("a tunnel relay starts once")
        }
    }

    private func inspected(_ outcome: TunnelInspection.Outcome, by inspection: TunnelInspection) {
        tlsFacts = inspection.facts
        inspectedUp = inspection.bytesUp
        inspectedDown = inspection.bytesDown
        switch outcome {
        case .relay(let toUpstream, let toClient):
            handedUp = UInt64(toUpstream.count)
            handedDown = UInt64(toClient.count)
            if let clientTLS, let upstreamStream {
                let pump = Self.tlsPump(client: clientTLS, upstream: upstreamStream, context: context,
                                        toUpstream: toUpstream, toClient: toClient)
                phase = .pumping(pump)
                return pumpTLS(pump)
            }
            guard let client = inspectedPlainClient, let upstream = upstreamStream else {
                preconditionFailure("an inspected plain tunnel reads through its sockets")
            }
            inspectedPlainClient = nil
            upstreamStream = nil
            // The pump registers the fds again before the loop next waits, taking over their entries.
            let pump = SplicePump(a: client.detachFD(), b: upstream.detachFD(), loop: context.loop, pipes: context.pipes,
                                  initialBytesAtoB: toUpstream, initialBytesBtoA: toClient)
            phase = .splicing(pump)
            splice(pump, readClientFirst: false)
        case .refused(let reason, let detail):
            phase = .ended
            recordClose(reason, detail: detail, up: inspectedUp, down: inspectedDown)
            context.shared.connectionClosed(identity)
        case .failed(let reason):
            phase = .ended
            recordClose(abortReason ?? reason, detail: nil, up: inspectedUp, down: inspectedDown)
            context.shared.connectionClosed(identity)
        }
    }

    /// The user-space relay for a TLS client: both sockets stop watching (their streams'
    /// handlers must not outlive them) and the pump takes their descriptors, writing what
    /// each side is owed first (OpenSSL's buffered input is the pump's to read first).
    private static func tlsPump(client: TLSStream, upstream: StreamSocket, context: LoopContext,
                                toUpstream: [UInt8], toClient: [UInt8]) -> TLSRelayPump {
        client.pauseReading()
        upstream.pauseReading()
        _ = client.socket.detachFD()
        return TLSRelayPump(a: .tls(client.connection), b: .plain(upstream.detachFD()), loop: context.loop,
                            buffers: context.relayBuffers, initialBytesAtoB: toUpstream, initialBytesBtoA: toClient)
    }

    private func pumpTLS(_ pump: TLSRelayPump) {
        pump.start { [self] result in
            finished(result)
            context.shared.connectionClosed(identity)
        }
    }

    private func splice(_ pump: SplicePump, readClientFirst: Bool? = nil) {
        // The connection counts (max-connections, the drain at shutdown) until its last
        // descriptor is closed, which a lingering side may delay past the close row.
        let shared = context.shared
        let identity = identity
        let gate = gateInspector == nil ? nil : SpliceGate(judge: { [unowned self] side, read in
            judgeFirstRead(from: side, read)
        }, handedOver: { [unowned self] handOver in
            inspectHandedOver(handOver)
        })
        pump.start(readAFirst: readClientFirst ?? self.readClientFirst, gate: gate, completion: { [self] result in
            self.finished(result)
        }, released: {
            shared.connectionClosed(identity)
        })
    }

    func idleTimedOut() {
        abort(.idleTimeout)
    }

    var stalledSince: UInt64? {
        switch phase {
        case .inspecting(let inspection): return inspection.stalledSince
        case .splicing(let pump): return pump.stalledSince
        case .pumping(let pump): return pump.stalledSince
        case .ended: return nil
        }
    }

    func stallTimedOut() {
        abort(.stalled)
    }

    func abortForShutdown() {
        abort(.shutdown)
    }

    private func abort(_ reason: ReasonCode) {
        abortReason = reason
        switch phase {
        case .inspecting(let inspection): inspection.abort(reason)
        case .splicing(let pump): pump.abort()
        case .pumping(let pump): pump.abort()
        case .ended: break
        }
    }

    private func finished(_ result: SpliceResult) {
        phase = .ended
        let reason: ReasonCode
        switch result.end {
        case .bothClosed: reason = .completed
        case .resetByA: reason = .clientReset
        case .resetByB: reason = .upstreamReset
        case .truncatedByA: reason = .clientTLSTruncated
        // A tunnel's upstream side is plain TCP, which has no truncation short of a reset.
        case .truncatedByB: reason = .upstreamReset
        case .aborted: reason = abortReason ?? .shutdown
        case .error(let error) where error.errno == EMFILE || error.errno == ENFILE:
            // No pipe could be made for a bulk direction.
            context.shared.noteOutOfDescriptors()
            reason = .outOfDescriptors
        case .error(let error):
            context.shared.logger.log(.notice, "relay-error session=\(identity.session) \(error)")
            reason = .internalError
        }
        let up = inspectedUp + result.bytesAtoB.subtractingClamped(handedUp)
        let down = inspectedDown + result.bytesBtoA.subtractingClamped(handedDown)
        recordClose(reason, detail: nil, up: up, down: down)
    }

    private func recordClose(_ reason: ReasonCode, detail: String?, up: UInt64, down: UInt64) {
        context.untrack(self)
        var entry = AuditEntry(event: closeEvent, decision: .allow, reason: reason, target: tunnel.target,
                               resolved: tunnel.resolved, rule: tunnel.rule, bytesUp: Int64(up),
                               bytesDown: Int64(down),
                               durationMs: ProxySessionTiming.milliseconds(from: tunnel.startedAt, to: monotonicNanos()),
                               principal: tunnel.principal?.name, scheme: tunnel.principal?.scheme)
        entry.reasonDetail = detail
        if let tlsFacts {
            entry.recordTLS(tlsFacts)
        }
        // The place is free before the close row can be read, so whoever sees the row may
        // open the next tunnel at once.
        quotaPlace?.release()
        context.shared.audit.record(entry, identity: identity)
    }
}

extension UInt64 {
    /// `self - other`, or 0 when `other` is larger.
    fileprivate func subtractingClamped(_ other: UInt64) -> UInt64 {
        self >= other ? self - other : 0
    }
}
