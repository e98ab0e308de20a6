import Glibc
import RelayCore
import RelayIO

/// Drives one accepted proxy connection: feeds socket events into its `ProxySession` and
/// carries out the actions it returns. All protocol decisions live in the session; this
/// class only moves bytes, arms timers and keeps buffers bounded.
/// Loop-confined: touched only on its loop's thread, so not `Sendable`; an answer from
/// another thread (the resolver, the audit queue) comes back through a `LoopBound`.
final class ClientConnection: IdleTracked {
    /// Above this many queued bytes for one side, stop reading the other side.
    private static let highWater = 64 * 1024

    /// Where the connection is in its life; each phase allows only the reads it names.
    private enum Phase {
        /// Reading the client's requests and relaying.
        case serving
        /// The client half-closed: its requests are all in, answers still go out.
        case clientDone
        /// The session closed the connection: what is queued for the client goes out and
        /// nothing more is read; then what `afterwards` says.
        case closing(afterwards: AfterClosing)
        /// The client's socket is closed, lingering on its own, or carried by a `TunnelRelay`:
        /// only a pending audit commit still reaches the session.
        case finished
    }

    private enum AfterClosing {
        /// The client already sent its FIN: nothing more can come, close at once.
        case close
        /// The client may still be sending its refused request: linger (`LingeringClose`),
        /// so it reads our answer instead of a reset that destroys it.
        case linger
    }

    /// The connected upstream and what is only true while it exists.
    private struct Upstream {
        let transport: UpstreamTransport
        let writer: BufferedWriter
        /// Its reads were started once; after that they are paused and resumed.
        var reading = false
    }

    /// An authentication call's answer may come inside the call, while the session is still
    /// issuing actions; a session never takes an event then, so that answer waits.
    private enum AuthCall {
        case none
        case inCall
        /// Answered inside the call: delivered once the session's current actions are done.
        case answered(ProxyAuthOutcome)
    }

    private let context: LoopContext
    private let settings: RuntimeSettings
    private var settingsGeneration: UInt64
    private let identity: SessionIdentity
    private var session: ProxySession
    /// A plain socket, or a `TLSStream` on an HTTPS listener.
    private let client: any RelayStream
    /// The client's TLS (handshake done) on an HTTPS listener: its certificate can prove
    /// who the client is, and its socket cannot be spliced.
    private let clientTLS: TLSConnection?
    private let toClient: BufferedWriter
    private var phase = Phase.serving
    private var upstream: Upstream?
    private var connectAttempt: ConnectAttempt?
    /// The relay's TLS handshake after a connect, before the session hears it connected.
    private var tlsHandshake: UpstreamTLSHandshake?
    /// What the relay's TLS to the current upstream settled, for its exchanges' rows; kept
    /// past the link's close so a close row written after it still carries them.
    private var upstreamTLSFacts: UpstreamTLSFacts?
    /// Created at the first request that needs it; holds connection-bound handshakes.
    private var authenticator: ConnectionAuthenticator?
    private var authCall = AuthCall.none
    /// The configuration's authenticator, followed across reloads.
    private var currentAuthenticator: ProxyAuthenticator?
    private var headerTimer: LoopTimer?
    private(set) var lastActivity: UInt64

    /// A plain listener's connection: `fd` as accepted.
    convenience init(context: LoopContext, fd: Int32, identity: SessionIdentity) {
        let socket = StreamSocket(fd: fd, loop: context.loop)
        socket.tuneForRelay()
        self.init(context: context, client: socket, tls: nil, identity: identity)
    }

    /// `client` tuned for relaying; `tls` its TLS when it is a `TLSStream` over it.
    init(context: LoopContext, client: any RelayStream, tls: TLSConnection?, identity: SessionIdentity) {
        self.context = context
        self.settingsGeneration = context.shared.settingsGeneration
        self.settings = context.shared.settings
        self.identity = identity
        self.session = ProxySession(settings: settings.session)
        self.currentAuthenticator = settings.authenticator
        self.client = client
        self.clientTLS = tls
        self.toClient = BufferedWriter(socket: client)
        self.lastActivity = monotonicNanos()
    }

    func start() {
        context.track(self)
        toClient.onError = { [self] _ in clientFailed(.clientReset) }
        toClient.onDrained = { [self] in drained() }
        client.startReading { [self] in clientReadable() }
        execute(session.start())
    }

    // MARK: IdleTracked

    func idleTimedOut() {
        clientFailed(.idleTimeout)
    }

    var stalledSince: UInt64? {
        earliest(toClient.stalledSince, upstream?.writer.stalledSince)
    }

    func stallTimedOut() {
        clientFailed(.stalled)
    }

    func abortForShutdown() {
        clientFailed(.shutdown)
    }

    // MARK: Socket events

    /// Reads of one socket per event before yielding to the loop's other connections, as
    /// `SplicePump` does: a fast body stream would otherwise hold the loop for as long as
    /// both peers keep up. The socket stays readable, so (level-triggered) the event returns.
    private static let readsPerEvent = 32

    private func clientReadable() {
        var reads = 0
        while wantsClient && reads < Self.readsPerEvent {
            switch client.read(into: context.scratch) {
            case .bytes(let count):
                reads += 1
                let now = monotonicNanos()
                lastActivity = now
                followReloads()
                execute(session.clientBytes(UnsafeRawBufferPointer(rebasing: context.scratch[..<count]), now: now))
            case .wouldBlock:
                return updateInterest()
            case .eof:
                phase = .clientDone
                deliver(.clientEOF)
            case .error:
                return clientFailed(.clientReset)
            }
        }
        updateInterest()
    }

    private func upstreamReadable() {
        var reads = 0
        while !isFinished, let stream = upstream?.transport.stream, wantsUpstream, reads < Self.readsPerEvent {
            switch stream.read(into: context.scratch) {
            case .bytes(let count):
                reads += 1
                let now = monotonicNanos()
                lastActivity = now
                followReloads()
                execute(session.upstreamBytes(UnsafeRawBufferPointer(rebasing: context.scratch[..<count]), now: now))
            case .wouldBlock:
                return updateInterest()
            case .eof:
                deliver(.upstreamEOF)
            case .error:
                deliver(.upstreamFailed)
            }
        }
        updateInterest()
    }

    /// New requests on a kept-alive connection are decided by the rules in force now,
    /// not the ones it was accepted under (limits and timeouts stay per connection).
    private func followReloads() {
        let current = context.shared.settingsGeneration
        guard current != settingsGeneration else { return }
        settingsGeneration = current
        let reloaded = context.shared.settings
        session.useRegistry(reloaded.session.registry)
        // Auth follows reloads too: a config that adds auth must not leave kept-alive
        // connections unauthenticated, and a principal proven under the old authenticator is
        // proven again under the new one (whose user store counts its versions afresh).
        session.useAuth(required: reloaded.session.requiresAuth, credentialsVersion: reloaded.session.credentialsVersion)
        authenticator?.close()
        authenticator = nil
        currentAuthenticator = reloaded.authenticator
    }

    private var isFinished: Bool {
        if case .finished = phase { true } else { false }
    }

    /// Only a serving connection reads its client, and only what the session and the
    /// upstream's queue can take.
    private var wantsClient: Bool {
        guard case .serving = phase else { return false }
        return session.wantsClientBytes && (upstream?.writer.pendingBytes ?? 0) < Self.highWater
    }

    private var wantsUpstream: Bool {
        session.wantsUpstreamBytes && toClient.pendingBytes < Self.highWater
    }

    /// Arms exactly the reads that can make progress now: backpressure in both directions.
    private func updateInterest() {
        guard !isFinished else { return }
        if wantsClient {
            client.resumeReading()
        } else {
            client.pauseReading()
        }
        if let link = upstream {
            let stream = link.transport.stream
            if wantsUpstream {
                if link.reading {
                    stream.resumeReading()
                } else {
                    upstream?.reading = true
                    stream.startReading { [self] in upstreamReadable() }
                }
            } else if link.reading {
                stream.pauseReading()
            }
        }
    }

    private func drained() {
        lastActivity = monotonicNanos()
        if case .closing(let afterwards) = phase, toClient.pendingBytes == 0 {
            return closeDrained(afterwards)
        }
        updateInterest()
    }

    private func deliver(_ event: ProxySessionEvent) {
        guard !isFinished else { return }
        // Any event may lead the session to decide a request already buffered (pipelined).
        followReloads()
        execute(session.handle(event, now: monotonicNanos()))
        updateInterest()
    }

    // MARK: Actions

    private func execute(_ actions: [ProxySessionAction]) {
        for action in actions {
            guard !isFinished else { return }
            switch action {
            case .sendToClient(let bytes):
                toClient.enqueue(bytes)
            case .sendToUpstream(let bytes):
                upstream?.writer.enqueue(bytes)
            case .resolve(let name, let port):
                resolve(name, port: port)
            case .connect(let address, let port):
                connect(address, port: port)
            case .audit(let entry, let awaitCommit):
                audit(entry, awaitCommit: awaitCommit)
            case .startTunnel(let tunnel, let established, let leftover):
                startTunnel(tunnel, established: established, leftover: leftover)
            case .authenticate(let request):
                authenticate(request)
            case .countRefusal(let reason, let status):
                if let source = identity.source {
                    context.shared.refusals.count(reason, status: status, source: source, listener: identity.listener)
                }
            case .startHeaderTimer:
                headerTimer = context.loop.scheduleTimer(after: settings.timeouts.header) { [self] in
                    deliver(.headerTimeout)
                }
            case .stopHeaderTimer:
                headerTimer?.cancel()
                headerTimer = nil
            case .closeUpstream:
                closeUpstream()
            case .resetUpstream:
                closeUpstream(reset: true)
            case .closeClient:
                beginClose()
            case .resetClient:
                client.setLinger0()
                finish()
            }
        }
        if case .answered(let outcome) = authCall {
            authCall = .none
            deliver(.authFinished(outcome))
        }
    }

    private func resolve(_ name: String, port: UInt16) {
        let connection = LoopBound(self, on: context.loop)
        context.shared.resolver.resolve(host: name, port: port) { result in
            connection.loop.execute {
                switch result {
                case .success(let addresses):
                    connection.value.deliver(.resolved(addresses.compactMap { IPAddress(bytes: $0.ipBytes) }))
                case .failure:
                    connection.value.deliver(.resolveFailed)
                }
            }
        }
    }

    private func connect(_ address: IPAddress, port: UInt16) {
        let socketAddress = SocketAddress(bytes: address.bytes, port: port)
        // Asked now: the session names the TLS server only while this connect is its step.
        let tlsServer = session.upstreamTLSServer
        upstreamTLSFacts = nil
        connectAttempt = TCPConnector.connect(to: socketAddress, on: context.loop,
                                              timeout: settings.timeouts.connect) { [self] result in
            connectAttempt = nil
            switch result {
            case .success(let fd):
                guard !isFinished else {
                    close(fd)
                    return
                }
                let socket = StreamSocket(fd: fd, loop: context.loop)
                socket.tuneForRelay()
                if let tlsServer {
                    startTLS(on: socket, server: tlsServer, resolved: Endpoint.text(address, port), port: port)
                } else {
                    attachUpstream(.plain(socket))
                }
            case .failure(let error):
                deliver(.upstreamConnectFailed(context.shared.connectFailureReason(error)))
            }
        }
    }

    /// The relay's own TLS over a connected upstream, under the rule's trust, checks and
    /// versions; the session hears of the connect only once it is done. A name is sent as
    /// SNI and checked against the certificate; an address is checked as an address.
    private func startTLS(on socket: StreamSocket, server: (host: Host, rule: String), resolved: String, port: UInt16) {
        let serverName: String?
        let checkedAs: String
        if let address = server.host.address {
            serverName = nil
            checkedAs = address.description
        } else {
            serverName = server.host.description
            checkedAs = server.host.description
        }
        let tlsContext = context.shared.settings.tls.upstream(forRule: server.rule)
        tlsHandshake = UpstreamTLSHandshake(socket: socket, context: tlsContext, server: checkedAs, port: port,
                                            timeout: settings.timeouts.connect) { [self] outcome in
            tlsHandshake = nil
            guard !isFinished else {
                if case .established(let stream) = outcome { stream.close() }
                return
            }
            switch outcome {
            case .established(let stream):
                upstreamTLSFacts = UpstreamTLSFacts(resolved: resolved, connection: stream.connection,
                                                    serverName: serverName)
                attachUpstream(.tls(stream))
            case .failed(let failure):
                let reason = failure.reason(asUpstream: true)
                context.shared.logger.log(.notice, "upstream TLS to \(resolved) (\(checkedAs), rule \(server.rule)): "
                                          + "\(reason.rawValue): \(failure.detail)")
                deliver(.upstreamConnectFailed(reason))
            case .timedOut:
                deliver(.upstreamConnectFailed(.upstreamTimeout))
            }
        }
    }

    private func attachUpstream(_ transport: UpstreamTransport) {
        let writer = BufferedWriter(socket: transport.stream)
        writer.onError = { [self] _ in deliver(.upstreamFailed) }
        writer.onDrained = { [self] in updateInterest() }
        upstream = Upstream(transport: transport, writer: writer)
        deliver(.upstreamConnected)
    }

    private func audit(_ entry: AuditEntry, awaitCommit: Bool) {
        var entry = entry
        // An open row is written before its connect: only one sent on the kept-alive TLS link
        // in use carries that link's TLS; a new connection's facts are not known yet.
        if entry.event != .requestOpen || upstream != nil {
            upstreamTLSFacts?.annotate(&entry)
        }
        guard awaitCommit else {
            return context.shared.audit.record(entry, identity: identity)
        }
        let connection = LoopBound(self, on: context.loop)
        context.shared.audit.record(entry, identity: identity, batchingOn: context) { committed in
            connection.loop.execute {
                let connection = connection.value
                if connection.isFinished {
                    connection.settleAfterFinish(committed ? .auditCommitted : .auditFailed)
                } else {
                    connection.deliver(committed ? .auditCommitted : .auditFailed)
                }
            }
        }
    }

    /// The connection closed while its open row's commit was pending: the session may still
    /// owe that row its close row, and only the audit part of its answer applies now.
    private func settleAfterFinish(_ event: ProxySessionEvent) {
        for case .audit(let entry, _) in session.handle(event, now: monotonicNanos()) {
            context.shared.audit.record(entry, identity: identity)
        }
    }

    private func authenticate(_ request: ProxyAuthRequest) {
        if let answer = ClientCertificateAuth.answer(tls: clientTLS, config: currentAuthenticator?.config) {
            // Decided inside the call: delivered once the session's current actions are done.
            authCall = .answered(answer)
            return
        }
        guard let shared = currentAuthenticator else {
            // Unreachable: sessions ask only when the settings carry an authenticator.
            let connection = LoopBound(self, on: context.loop)
            return context.loop.execute {
                connection.value.deliver(.authFinished(.refused(ProxyAuthRefusal(reason: .internalError))))
            }
        }
        let auth = authenticator ?? ConnectionAuthenticator(shared: shared, loop: context.loop,
                                                            clientAddress: identity.client)
        authenticator = auth
        authCall = .inCall
        auth.authenticate(request) { [self] outcome in
            if case .inCall = authCall {
                authCall = .answered(outcome)
            } else {
                deliver(.authFinished(outcome))
            }
        }
        if case .inCall = authCall { authCall = .none }
    }

    private func startTunnel(_ tunnel: TunnelContext, established: [UInt8], leftover: [UInt8]) {
        guard case .plain(let socket) = upstream?.transport else {
            // The session only tunnels once connected, and never over the relay's own TLS.
            return clientFailed(.internalError)
        }
        // A CONNECT pipelined behind a keep-alive response may find that response still
        // queued for a slow client: it goes out first, then the 200, then the tunnel.
        let toClientFirst = toClient.takeUnsent() + established
        headerTimer?.cancel()
        headerTimer = nil
        phase = .finished
        breakCycles()
        authenticator?.close()
        context.untrack(self)
        let upstreamFD = socket.detachFD()
        upstream = nil
        let clientSide: TunnelRelay.Client
        if let stream = client as? TLSStream {
            // The stream goes on (its TLS state is the tunnel's); its read handler, which
            // holds this connection, must not.
            stream.startReading {}
            stream.pauseReading()
            clientSide = .tls(stream)
        } else if let plain = client as? StreamSocket {
            clientSide = .plain(plain.detachFD())
        } else {
            preconditionFailure("a client is a socket or a TLS stream")
        }
        // The connection count moves with the sockets: the relay releases it when it ends.
        TunnelRelay(context: context, client: clientSide, upstreamFD: upstreamFD, clientLeftover: leftover,
                    toClientFirst: toClientFirst, tunnel: tunnel, closeEvent: .tunnelClose, identity: identity,
                    quotaPlace: session.takeTunnelQuotaPlace(),
                    inspector: context.shared.settings.tunnelInspector(rule: tunnel.rule, host: tunnel.host)).start()
    }

    /// Closes the upstream, or abandons its connect or handshake. A TLS upstream closed in
    /// order says so with close_notify first; a reset (a cut request) sends none, so the cut
    /// cannot pass for a complete exchange.
    private func closeUpstream(reset: Bool = false) {
        connectAttempt?.cancel()
        connectAttempt = nil
        tlsHandshake?.cancel()
        tlsHandshake = nil
        guard let link = upstream else { return }
        upstream = nil
        link.writer.onError = nil
        link.writer.onDrained = nil
        switch (link.transport, reset) {
        case (.tls(let stream), false): stream.shutdownWrite()
        case (.plain, false): break
        case (_, true): link.transport.stream.setLinger0()
        }
        link.transport.stream.close()
    }

    // MARK: Closing

    /// Something broke under the session: let it audit what was in flight, then close now.
    private func clientFailed(_ reason: ReasonCode) {
        switch phase {
        case .finished:
            return
        case .serving, .clientDone:
            execute(session.handle(.connectionLost(reason), now: monotonicNanos()))
        case .closing:
            break  // the session is done with this connection
        }
        finish()
    }

    /// Sends what is queued (a refusal, the end of a response), then closes gently.
    private func beginClose() {
        let afterwards: AfterClosing
        switch phase {
        case .serving: afterwards = .linger
        case .clientDone: afterwards = .close
        case .closing, .finished: return
        }
        phase = .closing(afterwards: afterwards)
        headerTimer?.cancel()
        headerTimer = nil
        closeUpstream()
        if toClient.pendingBytes == 0 {
            closeDrained(afterwards)
        } else {
            client.pauseReading()
        }
    }

    /// Everything owed to the client is written: FIN, then either close or linger.
    private func closeDrained(_ afterwards: AfterClosing) {
        switch afterwards {
        case .close:
            client.shutdownWrite()
            finish()
        case .linger:
            tearDown()
            let shared = context.shared, identity = identity
            let fd: Int32
            if let stream = client as? TLSStream {
                // close_notify ends the answer in order; the ciphertext the client may
                // still send is drained and dropped like plaintext would be, so its
                // unread refused request does not turn the close into a reset.
                stream.connection.shutdown()
                fd = stream.socket.detachFD()
                // Frees the TLS state and drops the handlers; the detached descriptor stays open.
                stream.close()
            } else if let plain = client as? StreamSocket {
                fd = plain.detachFD()
            } else {
                preconditionFailure("a client is a socket or a TLS stream")
            }
            // The connection counts until the lingering descriptor is closed.
            _ = LingeringClose.start(fd, on: context.loop, pipes: context.pipes,
                                     closed: { shared.connectionClosed(identity) })
        }
    }

    /// Closes the client now; a reset when bytes it was owed are lost.
    private func finish() {
        guard !isFinished else { return }
        if toClient.pendingBytes > 0 {
            // Bytes the client was owed are lost (the drain deadline, an idle timeout during
            // a refusal it does not read): a reset says so where a FIN would not.
            client.setLinger0()
        }
        tearDown()
        client.close()
        context.shared.connectionClosed(identity)
    }

    /// Ends everything but the client's descriptor, which the caller closes or hands on.
    private func tearDown() {
        phase = .finished
        headerTimer?.cancel()
        closeUpstream()
        breakCycles()
        authenticator?.close()
        session.takeTunnelQuotaPlace()?.release()
        context.untrack(self)
    }

    /// The writer callbacks hold this connection; drop them so it can be freed.
    private func breakCycles() {
        toClient.onError = nil
        toClient.onDrained = nil
    }
}
