import Glibc
import RelayCore
import RelayIO
import Synchronization

/// The configuration a connection runs under, swapped whole on reload so a connection
/// never sees half of an old config and half of a new one.
struct RuntimeSettings: Sendable {
    var session: ProxySession.Settings
    var limits: RelayLimits
    var timeouts: RelayTimeouts
    /// Proxy authentication; nil when the config says no scheme.
    var authenticator: ProxyAuthenticator?
    /// Tunnel TLS inspection's deadline and what overflow and timeout do.
    var tlsInspection: TLSInspectionSettings
    /// The configuration's TLS contexts.
    var tls: TLSContexts
}

/// What every loop shares: resolver, audit, log, the current settings and the connection count.
final class ServerShared: Sendable {
    let resolver: Resolver
    let audit: AuditSink
    let logger: RelayLog
    let sessionIDs = SessionIDGenerator()
    let sources = SourceConnectionCounts()
    let refusals = RefusalTally()
    let loopLoads: LoopLoads
    /// Monotonic nanoseconds when `refusals` was last written out.
    private let refusalsRecordedAt = Atomic<UInt64>(monotonicNanos())
    private let current: Mutex<RuntimeSettings>
    private let generation = Atomic<UInt64>(0)
    private let active = Atomic<Int>(0)
    /// Connections refused because the audit queue was full, not yet in a row of their own.
    private let unrecordedRefusals = Atomic<Int>(0)
    /// Monotonic second of the last "audit backlog full" log line, so a flood logs once a second.
    private let backlogNoticeSecond = Atomic<UInt64>(0)
    /// Monotonic second of the last "out of descriptors" log line, likewise.
    private let descriptorNoticeSecond = Atomic<UInt64>(0)
    /// Authenticators a reload replaced, while connections still hold them: their Digest
    /// tables keep proven HA1s, which the sweep must expire even if no request comes.
    private let retired = Mutex<[WeakAuthenticator]>([])

    private struct WeakAuthenticator: Sendable {
        weak var authenticator: ProxyAuthenticator?
    }

    /// The relay's own host and listeners, as the resolved-address check sees them.
    let localHost: LocalHost

    init(settings: RuntimeSettings, loops: Int, resolver: Resolver, audit: AuditSink, logger: RelayLog,
         localHost: LocalHost) {
        self.loopLoads = LoopLoads(loops: loops)
        self.current = Mutex(settings)
        self.resolver = resolver
        self.audit = audit
        self.logger = logger
        self.localHost = localHost
    }

    /// Reads the host's interface addresses again (an interface may come up or change its
    /// address while the relay runs): at start, on reload, and from the idle sweep.
    func refreshInterfaceAddresses() {
        localHost.update(interfaceAddresses: InterfaceAddresses.current().compactMap(IPAddress.init(bytes:)))
    }

    /// The settings in force now; a connection reads them once when it is accepted.
    var settings: RuntimeSettings {
        current.withLock { $0 }
    }

    /// Reload: later connections see `settings`; established ones keep theirs.
    func replaceSettings(_ settings: RuntimeSettings) {
        let old = current.withLock { current in
            defer { current = settings }
            return current.authenticator
        }
        if let old { retired.withLock { $0.append(WeakAuthenticator(authenticator: old)) } }
        generation.add(1, ordering: .releasing)
    }

    /// Expires what the current and the replaced authenticators still hold; forgets the
    /// replaced ones no connection holds any more.
    func sweepAuthenticators() {
        settings.authenticator?.sweep()
        let alive = retired.withLock { retired in
            retired.removeAll { $0.authenticator == nil }
            return retired.compactMap(\.authenticator)
        }
        for authenticator in alive { authenticator.sweep() }
    }

    /// Bumped by every reload: a connection compares it (one atomic load) before deciding a
    /// new request, and fetches the new rules only when it moved.
    var settingsGeneration: UInt64 {
        generation.load(ordering: .acquiring)
    }

    /// Counts an accepted connection; false (and nothing counted) when at the limit.
    func admitConnection(limit: Int) -> Bool {
        while true {
            let now = active.load(ordering: .relaxed)
            if now >= limit { return false }
            if active.compareExchange(expected: now, desired: now + 1, ordering: .relaxed).exchanged {
                return true
            }
        }
    }

    /// Counts a connection refused unrecorded; true when this second has no log line yet.
    func countUnrecordedRefusal() -> Bool {
        unrecordedRefusals.add(1, ordering: .relaxed)
        return Self.firstThisSecond(backlogNoticeSecond)
    }

    /// True for the first caller in each monotonic second, so a flood logs a line a second.
    private static func firstThisSecond(_ last: borrowing Atomic<UInt64>) -> Bool {
        let second = monotonicNanos() / 1_000_000_000
        let seen = last.load(ordering: .relaxed)
        return seen != second && last.compareExchange(expected: seen, desired: second, ordering: .relaxed).exchanged
    }

    /// The process has no descriptor left (EMFILE/ENFILE): says so, once a second at most,
    /// with the limit, so ops see the cause and not only its refusals.
    func noteOutOfDescriptors() {
        guard Self.firstThisSecond(descriptorNoticeSecond) else { return }
        logger.log(.error, "out of file descriptors (RLIMIT_NOFILE \(DescriptorBudget.softLimit), \(activeConnections) connections): "
                   + "refusing with 503 \(ReasonCode.outOfDescriptors.rawValue); lower max-connections or raise LimitNOFILE=")
    }

    /// The refusals counted since the last call (one atomic exchange; 0 nearly always).
    func takeUnrecordedRefusals() -> Int {
        guard unrecordedRefusals.load(ordering: .relaxed) > 0 else { return 0 }
        return unrecordedRefusals.exchange(0, ordering: .relaxed)
    }

    /// The connection `identity` accepted is closed: it no longer counts under either limit,
    /// nor on its loop.
    func connectionClosed(_ identity: SessionIdentity) {
        if let source = identity.source { sources.release(source) }
        if let loop = identity.loop { loopLoads.release(loop) }
        active.subtract(1, ordering: .relaxed)
    }

    /// Writes what `refusals` counted as one row per source, listener and reason, once per
    /// `refusal-summary-interval` (or now, when `force`d at shutdown).
    func recordRefusals(force: Bool = false) {
        let now = monotonicNanos()
        guard force || now &- refusalsRecordedAt.load(ordering: .relaxed) >= settings.timeouts.refusalSummary.monotonicNanos
        else { return }
        refusalsRecordedAt.store(now, ordering: .relaxed)
        for (key, count) in refusals.take() {
            let identity = SessionIdentity(session: sessionIDs.next(), client: key.source?.description ?? "*",
                                           listener: key.listener)
            audit.record(AuditEntry(event: .refused, decision: .deny, reason: key.reason, status: key.status,
                                    reasonDetail: count.detail),
                         identity: identity)
        }
    }

    var activeConnections: Int {
        active.load(ordering: .relaxed)
    }
}
