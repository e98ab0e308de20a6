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
    /// The state directory this process holds (trail, lock, keys): a reload cannot move it.
    private let stateDir: String
    private let logger: RelayLog
    private let group: EventLoopGroup
    /// Each loop's own state, one per loop in loop order.
    private let contexts: [LoopBound<LoopContext>]
    private let shared: ServerShared
    private let auditLog: AuditLog
    private let listeners = ListenerSet()
    /// Holds the state directory for this process (`StateDirectory.lock`) until it exits.
    private let stateLock: Int32
    /// The descriptor every listener spends to refuse a client when none is left.
    private let descriptorReserve = DescriptorReserve()
    /// Open tunnels per principal, over every loop and across reloads.
    private let tunnelQuota: TunnelQuota
    /// Set when the drain starts; the status endpoint answers `503 draining` from then on.
    private let draining = DrainFlag()

    /// Builds everything that can fail before a socket is bound: the audit trail and the loops.
    public init(config: RelayConfig, configPath: String?, logger: RelayLog) throws {
        self.configPath = configPath
        self.logger = logger
        self.stateDir = config.stateDir
        try StateDirectory.prepare(config.stateDir)
        stateLock = try StateDirectory.lock(config.stateDir)
        self.auditLog = try AuditLog(path: config.stateDir + "/audit.db", synchronousFull: config.auditSync == .full)
        let leftOpen = try auditLog.closeStreamsLeftOpen()
        if leftOpen > 0 {
            logger.log(.warning, "audit: \(leftOpen) streams were left open by a relay that stopped without recording their end; "
                       + "closed as \(ReasonCode.relayCrashed.rawValue)")
        }
        let loopCount = Self.loopCount(config)
        let descriptorLimit = DescriptorBudget.raiseSoftLimit()
        if let warning = DescriptorBudget.warning(config, loops: loopCount, limit: descriptorLimit) {
            logger.log(.warning, "warning: \(warning)")
        }
        self.group = EventLoopGroup(count: loopCount)
        let tunnelQuota = TunnelQuota(limit: config.limits.maxTunnelsPerPrincipal)
        self.tunnelQuota = tunnelQuota
        let localHost = LocalHost()
        let settings = try Self.runtimeSettings(config, helperLoop: group.loops[0], logger: logger,
                                                tunnelQuota: tunnelQuota, localHost: localHost, draining: draining,
                                                previous: nil)
        Self.logWarnings(config, settings, logger: logger)
        let shared = ServerShared(settings: settings, loops: loopCount,
                                  resolver: Resolver(),
                                  audit: AuditSink(log: auditLog, logger: logger), logger: logger,
                                  localHost: localHost)
        self.shared = shared
        self.contexts = group.loops.map { LoopBound(sending: LoopContext(loop: $0, shared: shared), on: $0) }
        try listeners.bindAll(config)
        showListenersToTheAddressCheck()
    }

    /// The relay's own listening endpoints (real ports) and the host's addresses, which the
    /// resolved-address check refuses (`relay-loop`) and guards.
    private func showListenersToTheAddressCheck() {
        shared.localHost.update(listeners: listeners.all.compactMap { entry in
            let bound = entry.listener.localAddress
            return IPAddress(bytes: bound.ipBytes).map { ListenAddress(host: $0, port: bound.port) }
        })
        shared.refreshInterfaceAddresses()
    }

    /// Event loops `config` asks for: `loops`, else one per online core.
    public static func loopCount(_ config: RelayConfig) -> Int {
        max(1, config.loops ?? Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }

    /// The settings `config` gives new connections. `tunnelQuota`, `localHost` and
    /// `draining` are the server's own and outlive reloads (a reload sets the quota's limit
    /// once it holds).
    static func runtimeSettings(_ config: RelayConfig, helperLoop: EventLoop, logger: RelayLog,
                                tunnelQuota: TunnelQuota, localHost: LocalHost, draining: DrainFlag,
                                previous: RuntimeSettings?) throws -> RuntimeSettings {
        // TLS first: a certificate that cannot be read refuses the load before anything starts.
        let tls = try TLSContexts.build(config, previous: previous?.tls)
        let pseudonyms = try NamePseudonyms(stateDir: config.stateDir, create: true)
        let authenticator = try AuthSetup.make(config, helperLoop: helperLoop, logger: logger)
        var credentialsVersion: (@Sendable () -> UInt64)?
        if let store = authenticator?.store {
            credentialsVersion = { store.generation }
        }
        var session = ProxySession.Settings(
            registry: config.registry,
            headLimits: HTTPHeadLimits(maxHeadBytes: config.limits.maxRequestHead, maxHeaders: config.limits.maxHeaders),
            requiresAuth: authenticator != nil,
            credentialsVersion: credentialsVersion,
            tunnelQuota: tunnelQuota,
            localHost: localHost)
        session.unknownNamePseudonym = { pseudonyms.pseudonym($0) }
        session.relayFacts = RelayFacts(version: RelayVersion.current, instance: config.instance ?? HostName.current,
                                        isDraining: { draining.isSet })
        return RuntimeSettings(session: session, limits: config.limits, timeouts: config.timeouts,
                               authenticator: authenticator, tlsInspection: config.tlsInspection, tls: tls)
    }

    /// What a load should tell ops without refusing it: `verify=off` rules, certificates
    /// about to expire.
    private static func logWarnings(_ config: RelayConfig, _ settings: RuntimeSettings, logger: RelayLog) {
        for warning in config.warnings {
            logger.log(.warning, "\(warning)")
        }
        for warning in settings.tls.warnings {
            logger.log(.warning, "warning: \(warning)")
        }
    }

    /// The addresses actually bound (ephemeral ports resolved), proxy listeners first.
    public var listenAddresses: [String] {
        listeners.all.map(\.name)
    }

    /// Starts loops and accepting; returns once the daemon is ready.
    public func start() {
        for context in contexts {
            context.loop.execute { context.value.startSweeping() }
        }
        for entry in listeners.all {
            startAccepting(entry)
        }
        logger.announce("ready listeners=\(listenAddresses.joined(separator: ","))")
        SystemdNotifier.notify("READY=1\nSTATUS=relaying")
    }

    /// Every loop accepts on every listener; each connection then lives on the least loaded
    /// loop. A forward reads its target per connection, so a reload that retargets it
    /// reaches the next one.
    private func startAccepting(_ entry: ListenerSet.Entry) {
        let name = entry.listener.localAddress.description
        // A plaintext answer on a TLS port would be garbage to its TLS client.
        let httpAnswer = entry.kind == .proxy
        let exhausted: @Sendable (Int32, SocketAddress) -> Void = { [self] fd, peer in
            shared.noteOutOfDescriptors()
            refuseBeforeRequest(fd, .outOfDescriptors, source: ClientSource(peer), listener: name, httpAnswer: httpAnswer)
        }
        let route = entry.route
        let tlsKey = entry.tlsKey
        entry.listener.start(on: group.loops, reserve: descriptorReserve, onExhausted: exhausted) { [self] fd, peer, loop in
            // The connection lives on the least loaded loop from its first byte on; only a
            // connection placed elsewhere pays the hop to get there.
            let home = shared.loopLoads.place(acceptedOn: loop.index)
            let accept: @Sendable (LoopContext) -> Void = { [self] context in
                if let (forward, target) = route?.value {
                    acceptForward(fd, peer: peer, listener: name, forward: forward, target: target, on: context)
                } else if let tlsKey {
                    acceptTLSProxy(fd, peer: peer, listener: name, key: tlsKey, on: context)
                } else {
                    acceptProxy(fd, peer: peer, listener: name, on: context)
                }
            }
            if home == loop.index {
                accept(contexts[home].value)
            } else {
                let context = contexts[home]
                group.loops[home].execute { accept(context.value) }
            }
        }
    }

    /// Runs on the connection's loop, which keeps it.
    private func acceptProxy(_ fd: Int32, peer: SocketAddress, listener: String, on context: LoopContext) {
        guard let identity = admit(fd, peer: peer, listener: listener, httpAnswer: true, on: context) else { return }
        ClientConnection(context: context, fd: fd, identity: identity).start()
    }

    /// An HTTPS listener's connection: admitted as any, then its handshake under the
    /// context the current settings hold for its line (the one a reload just built).
    private func acceptTLSProxy(_ fd: Int32, peer: SocketAddress, listener: String, key: TLSListenerKey,
                                on context: LoopContext) {
        guard let identity = admit(fd, peer: peer, listener: listener, httpAnswer: false, on: context) else { return }
        let failure: String
        if let tls = context.shared.settings.tls.listener(key) {
            do {
                return try ClientTLSHandshake(context: context, fd: fd, identity: identity, tls: tls).start()
            } catch {
                failure = error.description
            }
        } else {
            // Unreachable: a kept or added TLS socket's line is in the settings it was committed with.
            close(fd)
            failure = "no TLS context for listen \(key.address)"
        }
        logger.log(.error, "tls-setup session=\(identity.session) client=\(identity.client) \(failure)")
        if let source = identity.source {
            shared.refusals.count(.internalError, status: nil, source: source, listener: listener, detail: failure)
        }
        shared.connectionClosed(identity)
    }

    private func acceptForward(_ fd: Int32, peer: SocketAddress, listener: String, forward: ForwardDirective,
                               target: String, on context: LoopContext) {
        guard let identity = admit(fd, peer: peer, listener: listener, httpAnswer: false, on: context) else { return }
        ForwardConnection(context: context, fd: fd, forward: forward, target: target, identity: identity).start()
    }

    /// Admission, cheapest refusal first: the audit queue, the source's own limit
    /// (`max-connections-per-source`), then the total (`max-connections`). The identity of
    /// an admitted connection, which counts under both limits and on `context`'s loop until
    /// `connectionClosed`; nil when `fd` was refused (and closed).
    private func admit(_ fd: Int32, peer: SocketAddress, listener: String, httpAnswer: Bool,
                       on context: LoopContext) -> SessionIdentity? {
        let loop = context.loop.index
        guard let identity = admitUnderLimits(fd, peer: peer, listener: listener, httpAnswer: httpAnswer) else {
            shared.loopLoads.release(loop)
            return nil
        }
        var placed = identity
        placed.loop = loop
        return placed
    }

    private func admitUnderLimits(_ fd: Int32, peer: SocketAddress, listener: String, httpAnswer: Bool) -> SessionIdentity? {
        let limits = shared.settings.limits
        guard admitWhileAuditKeepsUp(fd, listener: listener, limits: limits, httpAnswer: httpAnswer) else { return nil }
        let source = ClientSource(peer)
        guard shared.sources.admit(source, limit: limits.maxConnectionsPerSource) else {
            refuseBeforeRequest(fd, .sourceLimit, source: source, listener: listener, httpAnswer: httpAnswer)
            return nil
        }
        guard shared.admitConnection(limit: limits.maxConnections) else {
            shared.sources.release(source)
            refuseBeforeRequest(fd, .overloaded, source: source, listener: listener, httpAnswer: httpAnswer)
            return nil
        }
        return SessionIdentity(session: shared.sessionIDs.next(), client: peer.description, listener: listener,
                               source: source)
    }

    /// With `audit-backlog` rows or more waiting for their commit (the disk stalls under a
    /// flood of connections), a new connection is refused (`503 audit-backlog`, a close) and
    /// counted instead of recorded, so the queue stops growing; auditd's backlog limit makes
    /// the same trade. The first connection admitted afterwards records one row with the
    /// count. False when `fd` was refused (and closed).
    private func admitWhileAuditKeepsUp(_ fd: Int32, listener: String, limits: RelayLimits, httpAnswer: Bool) -> Bool {
        let backlog = shared.audit.log.pendingCount
        guard backlog < limits.maxAuditBacklog else {
            refuse(fd, .auditBacklog, httpAnswer: httpAnswer)
            if shared.countUnrecordedRefusal() {
                logger.log(.warning, "audit backlog of \(backlog) rows: refusing new connections, counted until it drains")
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

    /// A connection refused before it could send a request: answered and counted with the
    /// others from its source (`RefusalTally`), not recorded one by one.
    private func refuseBeforeRequest(_ fd: Int32, _ reason: ReasonCode, source: ClientSource, listener: String,
                                     httpAnswer: Bool) {
        refuse(fd, reason, httpAnswer: httpAnswer)
        shared.refusals.count(reason, status: httpAnswer ? reason.refusalStatus : nil, source: source, listener: listener)
    }

    /// Answers a refused connection without waiting and closes it: a best-effort HTTP
    /// refusal on a proxy listener (the accept path never blocks on a client), a reset on a
    /// static forward, whose raw TCP client has no status line to read.
    private func refuse(_ fd: Int32, _ reason: ReasonCode, httpAnswer: Bool) {
        guard httpAnswer else { return closeWithReset(fd) }
        let bytes = ProxyResponses.refusal(reason)
        sendBestEffort(fd, bytes)
        close(fd)
    }

    /// SIGHUP: re-read the config; on success new connections use it, established ones keep
    /// theirs. Listeners follow the config: new ones are bound, removed ones closed (what
    /// they accepted goes on), forwards retargeted; a listener that cannot be bound refuses
    /// the whole reload.
    public func reload() {
        guard let configPath else { return }
        SystemdNotifier.notify("RELOADING=1")
        do {
            let config = try ConfigFileLoader.load(path: configPath)
            guard config.stateDir == stateDir else {
                throw ReloadRefusal("state-dir changes from \(stateDir) to \(config.stateDir): the audit trail and its lock stay where they are until a restart")
            }
            let change = try listeners.prepare(config)
            let settings: RuntimeSettings
            do {
                settings = try Self.runtimeSettings(config, helperLoop: group.loops[0], logger: logger,
                                                    tunnelQuota: tunnelQuota, localHost: shared.localHost,
                                                    draining: draining, previous: shared.settings)
            } catch {
                listeners.abandon(change)
                throw error
            }
            // Nothing below can fail: the reload takes effect whole.
            Self.logWarnings(config, settings, logger: logger)
            tunnelQuota.setLimit(config.limits.maxTunnelsPerPrincipal)
            shared.replaceSettings(settings)
            listeners.commit(change)
            showListenersToTheAddressCheck()
            for entry in change.added {
                startAccepting(entry)
                logger.log(.notice, "listener added \(entry.name)")
            }
            for entry in change.removed {
                entry.listener.stop()
                logger.log(.notice, "listener closed \(entry.name) (connections it accepted go on)")
            }
            for (name, from, to) in change.retargeted {
                logger.log(.notice, "listener \(name) now forwards to \(to) (was \(from))")
            }
            logger.log(.notice, "reloaded config=\(configPath) rules=\(config.rules.count) "
                       + "listeners=\(listenAddresses.joined(separator: ","))")
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
        draining.set()
        for entry in listeners.all {
            entry.listener.stop()
        }
        let deadline = monotonicNanos() + shared.settings.timeouts.drain.monotonicNanos
        logger.log(.notice, "draining connections=\(shared.activeConnections)")
        while shared.activeConnections > 0 && monotonicNanos() < deadline {
            usleep(50_000)
        }
        for context in contexts {
            context.loop.sync {
                context.value.stopSweeping()
                context.value.abortAll()
            }
        }
        let abortDeadline = monotonicNanos() + 2_000_000_000
        while shared.activeConnections > 0 && monotonicNanos() < abortDeadline {
            usleep(10_000)
        }
        shared.recordRefusals(force: true)
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
        if shared.activeConnections == 0 {
            // The next start need not search this run's rows for streams left open.
            do {
                try auditLog.markAllStreamsClosedUnlessRowsAreOwed()
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
