import CRelayShims
import Dispatch
import Glibc
import RelayCore
import RelayIO
import Synchronization

/// The running daemon: listeners, event loops, audit trail, reload and shutdown.
///
/// Start order: audit trail → loops → listeners → READY. Stop runs in reverse: listeners →
/// drain (bounded by `drain-timeout`) → abort what is left → flush audit.
public final class RelayServer: Sendable {
    private let configPath: String?
    private let logger: RelayLog
    private let group: EventLoopGroup
    private let contexts: [LoopContext]
    private let shared: ServerShared
    private let auditLog: AuditLog
    private let listeners: Mutex<[TCPListener]> = Mutex([])
    private let boundAddresses: Mutex<[String]> = Mutex([])
    /// Open tunnels per principal, over every loop and across reloads.
    private let tunnelQuota: TunnelQuota

    /// Builds everything that can fail before a socket is bound: the audit trail and the loops.
    public init(config: RelayConfig, configPath: String?, logger: RelayLog) throws {
        self.configPath = configPath
        self.logger = logger
        try StateDirectory.prepare(config.stateDir)
        self.auditLog = try AuditLog(path: config.stateDir + "/audit.db", synchronousFull: config.auditSync == .full)
        let leftOpen = try auditLog.closeStreamsLeftOpen()
        if leftOpen > 0 {
            logger.log(.error, "audit: \(leftOpen) streams were left open by a relay that stopped without recording their end; "
                       + "closed as \(ReasonCode.relayCrashed.rawValue)")
        }
        let loopCount = max(1, config.loops ?? Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        self.group = EventLoopGroup(count: loopCount)
        let tunnelQuota = TunnelQuota(limit: config.limits.maxTunnelsPerPrincipal)
        self.tunnelQuota = tunnelQuota
        let shared = ServerShared(settings: try Self.runtimeSettings(config, helperLoop: group.loops[0], logger: logger,
                                                                     tunnelQuota: tunnelQuota),
                                  resolver: Resolver(),
                                  audit: AuditSink(log: auditLog, logger: logger), logger: logger)
        self.shared = shared
        self.contexts = group.loops.map { LoopContext(loop: $0, shared: shared) }
        try bind(config)
    }

    /// `tunnelQuota` is the server's one quota: its counts outlive reloads, which set its limit.
    static func runtimeSettings(_ config: RelayConfig, helperLoop: EventLoop, logger: RelayLog,
                                tunnelQuota: TunnelQuota) throws -> RuntimeSettings {
        let authenticator = try AuthSetup.make(config, helperLoop: helperLoop, logger: logger)
        tunnelQuota.setLimit(config.limits.maxTunnelsPerPrincipal)
        var credentialsVersion: (@Sendable () -> UInt64)?
        if let store = authenticator?.store {
            credentialsVersion = { store.generation }
        }
        return RuntimeSettings(
            session: ProxySession.Settings(
                registry: config.registry,
                headLimits: HTTPHeadLimits(maxHeadBytes: config.limits.maxRequestHead,
                                           maxHeaders: config.limits.maxHeaders),
                requiresAuth: authenticator != nil,
                credentialsVersion: credentialsVersion,
                tunnelQuota: tunnelQuota),
            limits: config.limits, timeouts: config.timeouts, authenticator: authenticator)
    }

    /// The addresses actually bound (ephemeral ports resolved), proxy listeners first.
    public var listenAddresses: [String] {
        boundAddresses.withLock { $0 }
    }

    private func bind(_ config: RelayConfig) throws {
        var bound: [TCPListener] = []
        var names: [String] = []
        for address in config.listeners {
            let listener = try Self.listen(address)
            bound.append(listener)
            names.append(listener.localAddress.description)
        }
        for forward in config.forwards {
            let listener = try Self.listen(forward.listen)
            bound.append(listener)
            names.append("forward:\(listener.localAddress.description)")
        }
        listeners.withLock { $0 = bound }
        boundAddresses.withLock { $0 = names }
    }

    private static func listen(_ address: ListenAddress) throws -> TCPListener {
        guard let socketAddress = SocketAddress(ip: address.host.description, port: address.port) else {
            throw IOError("listen \(address)", errno: EINVAL)
        }
        return try TCPListener.bind(socketAddress)
    }

    /// Starts loops and accepting; returns once the daemon is ready.
    public func start(config: RelayConfig) {
        for context in contexts {
            context.loop.execute { context.startSweeping() }
        }
        let bound = listeners.withLock { $0 }
        let proxyCount = config.listeners.count
        for (index, listener) in bound.enumerated() {
            let name = listener.localAddress.description
            // Every loop accepts on every listener and keeps what it accepts.
            if index < proxyCount {
                listener.start(on: group.loops) { [self] fd, peer, loop in
                    acceptProxy(fd, peer: peer, listener: name, on: contexts[loop.index])
                }
            } else {
                let forward = config.forwards[index - proxyCount]
                let target = ProxySession.endpoint(forward.host, forward.port)
                listener.start(on: group.loops) { [self] fd, peer, loop in
                    acceptForward(fd, peer: peer, listener: name, forward: forward, target: target,
                                  on: contexts[loop.index])
                }
            }
        }
        logger.log(.error, "ready listeners=\(listenAddresses.joined(separator: ","))")
        SystemdNotifier.notify("READY=1\nSTATUS=relaying")
    }

    /// Runs on the loop that accepted, which keeps the connection.
    private func acceptProxy(_ fd: Int32, peer: SocketAddress, listener: String, on context: LoopContext) {
        let limits = shared.settings.limits
        guard admitWhileAuditKeepsUp(fd, listener: listener, limits: limits, httpAnswer: true) else { return }
        let identity = SessionIdentity(session: shared.sessionIDs.next(), client: peer.description, listener: listener)
        guard shared.admitConnection(limit: limits.maxConnections) else {
            return refuseOverloaded(fd, identity: identity, httpAnswer: true)
        }
        ClientConnection(context: context, fd: fd, identity: identity).start()
    }

    private func acceptForward(_ fd: Int32, peer: SocketAddress, listener: String, forward: ForwardDirective,
                               target: String, on context: LoopContext) {
        let limits = shared.settings.limits
        guard admitWhileAuditKeepsUp(fd, listener: listener, limits: limits, httpAnswer: false) else { return }
        let identity = SessionIdentity(session: shared.sessionIDs.next(), client: peer.description, listener: listener)
        guard shared.admitConnection(limit: limits.maxConnections) else {
            return refuseOverloaded(fd, identity: identity, httpAnswer: false)
        }
        ForwardConnection(context: context, fd: fd, forward: forward, target: target, identity: identity).start()
    }

    /// With `audit-backlog` rows or more waiting for their commit (the disk stalls under a
    /// flood of connections), a new connection is refused (`503 audit-backlog`, a close) and
    /// counted instead of recorded, so the queue stops growing; auditd's backlog limit makes
    /// the same trade. The first connection admitted afterwards records one row with the
    /// count. False when `fd` was refused (and closed).
    private func admitWhileAuditKeepsUp(_ fd: Int32, listener: String, limits: RelayLimits, httpAnswer: Bool) -> Bool {
        let backlog = shared.audit.log.pendingCount
        guard backlog < limits.maxAuditBacklog else {
            if httpAnswer { sendBestEffort(fd, ProxyResponses.refusal(.auditBacklog)) }
            close(fd)
            if shared.countUnrecordedRefusal() {
                logger.log(.notice, "audit backlog of \(backlog) rows: refusing new connections, counted until it drains")
            }
            return false
        }
        let refused = shared.takeUnrecordedRefusals()
        if refused > 0 {
            let identity = SessionIdentity(session: shared.sessionIDs.next(), client: "*", listener: listener)
            shared.audit.record(AuditEntry(event: .refused, decision: .deny, reason: .auditBacklog, status: 503,
                                           reasonDetail: "\(refused) connections refused while the audit queue was full"),
                                identity: identity)
        }
        return true
    }

    /// A refusal written once without waiting: the accept path never blocks on a client.
    private func sendBestEffort(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { crelay_send_nosignal(fd, $0.baseAddress, $0.count) }
    }

    /// Over the connection limit: a best-effort `503` (never blocking the accept queue), a row, a close.
    private func refuseOverloaded(_ fd: Int32, identity: SessionIdentity, httpAnswer: Bool) {
        if httpAnswer { sendBestEffort(fd, ProxyResponses.refusal(.overloaded)) }
        close(fd)
        shared.audit.record(AuditEntry(event: .refused, decision: .deny, reason: .overloaded, status: httpAnswer ? 503 : nil),
                            identity: identity)
    }

    /// SIGHUP: re-read the config; on success new connections use it, established ones keep theirs.
    public func reload() {
        guard let configPath else { return }
        SystemdNotifier.notify("RELOADING=1")
        do {
            let config = try ConfigFileLoader.load(path: configPath)
            shared.replaceSettings(try Self.runtimeSettings(config, helperLoop: group.loops[0], logger: logger,
                                                            tunnelQuota: tunnelQuota))
            logger.log(.notice, "reloaded config=\(configPath) rules=\(config.rules.count)")
            SystemdNotifier.notify("READY=1\nSTATUS=relaying (reloaded)")
        } catch {
            logger.log(.error, "reload refused, keeping the running config: \(error)")
            SystemdNotifier.notify("READY=1\nSTATUS=relaying (reload refused: see the log)")
        }
    }

    /// SIGTERM: stop accepting, let tunnels finish until the drain deadline, abort the rest,
    /// flush the audit trail. Blocks the calling (non-loop) thread until done.
    public func shutdown() {
        SystemdNotifier.notify("STOPPING=1")
        listeners.withLock { all in
            for listener in all { listener.stop() }
        }
        let deadline = monotonicNanos() + shared.settings.timeouts.drain.monotonicNanos
        logger.log(.notice, "draining connections=\(shared.activeConnections)")
        while shared.activeConnections > 0 && monotonicNanos() < deadline {
            usleep(50_000)
        }
        for context in contexts {
            context.loop.sync {
                context.stopSweeping()
                context.abortAll()
            }
        }
        let abortDeadline = monotonicNanos() + 2_000_000_000
        while shared.activeConnections > 0 && monotonicNanos() < abortDeadline {
            usleep(10_000)
        }
        // A connection that ended while its open row was committing records its close row
        // when the commit answers, from a task the answer queued on its loop: a pass over
        // every loop after each flush runs those tasks, until they add nothing more.
        for _ in 0..<3 {
            auditLog.flush()
            for context in contexts {
                context.loop.sync {}
            }
            if auditLog.pendingCount == 0 { break }
        }
        if shared.activeConnections == 0 && auditLog.pendingCount == 0 && !auditLog.hasUnrecordedLosses {
            // The next start need not search this run's rows for streams left open.
            do {
                try auditLog.markAllStreamsClosed()
            } catch {
                logger.log(.error, "audit: could not record that every stream is closed: \(error)")
            }
        }
        auditLog.close()
        let dropped = auditLog.droppedCount
        logger.log(dropped > 0 ? .error : .notice,
                   dropped > 0 ? "stopped; \(dropped) audit rows could not be stored since start" : "stopped")
    }
}
