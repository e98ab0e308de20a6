import FuzzSupport
import Glibc
import RelayCore

/// Reads a fuzz input as a session's life. The first byte sets the connection up (bit 0:
/// proxy auth required, 1: a tunnel quota of one, 2: tight head limits, 3: the relay knows
/// its own host, 4: a user store version). Then each byte picks an `Event` (byte % 12),
/// followed by the bytes that event needs; an event the environment could not produce now
/// is skipped (its bytes are still taken).
struct SessionScript {
    /// What happens next, in the order of the byte values that pick it.
    enum Event: Int, CaseIterable {
        /// A length byte, then up to that many bytes from the client.
        case clientBytes
        case clientEOF
        /// A byte: 0–3 addresses from the answer pool (each a byte) or a failure.
        case resolverAnswer
        /// A byte: connected, or one of the connect failures.
        case connectAnswer
        /// A byte: the oldest owed commit stored or failed.
        case commitAnswer
        /// A byte: granted (principal, scope, mutual auth) or refused (reason, claimed name).
        case authAnswer
        /// A length byte, then up to that many bytes from the upstream.
        case upstreamBytes
        case upstreamEOF
        case upstreamFailed
        case headerTimeout
        /// A byte: why the connection was lost.
        case connectionLost
        /// A byte: which registry, auth on or off, a new user store version.
        case reload
    }

    private var input: FuzzInput
    private var session: ProxySession
    private var world: SessionWorld
    private let quota: TunnelQuota?
    private let version: CredentialsVersion
    private var now: UInt64 = 1_000_000_000
    /// `FUZZ_SESSION_TRACE=1` writes each event and the actions it gave, for reading a
    /// crashing script replayed by hand.
    private static let tracing = getenv("FUZZ_SESSION_TRACE") != nil

    init(_ input: FuzzInput) {
        var input = input
        let setup = input.byte() ?? 0
        let version = CredentialsVersion()
        let quota = setup & 2 != 0 ? TunnelQuota(limit: 1) : nil
        let limits = setup & 4 != 0 ? HTTPHeadLimits(maxHeadBytes: 512, maxHeaders: 8) : HTTPHeadLimits()
        var versionSource: (@Sendable () -> UInt64)?
        if setup & 16 != 0 {
            versionSource = { version.current }
        }
        var settings = ProxySession.Settings(registry: SessionFixtures.registry, headLimits: limits,
                                             requiresAuth: setup & 1 != 0, credentialsVersion: versionSource,
                                             tunnelQuota: quota, localHost: setup & 8 != 0 ? SessionFixtures.localHost : nil)
        settings.unknownNamePseudonym = { (name: String) in "pseudonym-\(name.utf8.count)" }
        self.version = version
        self.quota = quota
        self.input = input
        session = ProxySession(settings: settings)
        world = SessionWorld(knowsLocalHost: setup & 8 != 0, requiresAuth: setup & 1 != 0)
    }

    mutating func run() {
        apply(session.start(), after: "start")
        while let byte = input.byte() {
            now += 1_000_000
            let event = Event(rawValue: Int(byte) % Event.allCases.count)!
            if Self.tracing { trace("event \(event)") }
            step(event)
        }
        finish()
    }

    /// Reads the event's operands, then delivers it if the environment could produce it now.
    /// A skipped event still takes its operands, so one change to a script leaves the rest
    /// of it meaning what it meant.
    private mutating func step(_ event: Event) {
        switch event {
        case .clientBytes:
            let bytes = input.chunk()
            guard clientReads else { return skipped(event) }
            apply(bytes.withUnsafeBytes { session.clientBytes($0, now: now) },
                  after: "client \(String(decoding: bytes, as: UTF8.self).debugDescription)")
        case .clientEOF:
            guard clientReads else { return skipped(event) }
            world.clientEOF = true
            deliver(.clientEOF)
        case .resolverAnswer:
            let answer = SessionOutcomes.resolverAnswer(&input)
            guard world.resolveOwed else { return skipped(event) }
            world.answeredResolve(answer)
            deliver(answer.map { .resolved($0) } ?? .resolveFailed)
        case .connectAnswer:
            let failure = SessionOutcomes.connectFailure(&input)
            guard world.connectOwed != nil else { return skipped(event) }
            world.answeredConnect(success: failure == nil)
            deliver(failure.map { .upstreamConnectFailed($0) } ?? .upstreamConnected)
        case .commitAnswer:
            let committed = (input.byte() ?? 0) % 4 != 3
            guard world.answeredCommit(committed) else { return skipped(event) }
            deliver(committed ? .auditCommitted : .auditFailed)
        case .authAnswer:
            let outcome = SessionOutcomes.authOutcome(&input)
            guard world.authOwed else { return skipped(event) }
            world.answeredAuth()
            deliver(.authFinished(outcome))
        case .upstreamBytes:
            let bytes = input.chunk()
            guard upstreamReads else { return skipped(event) }
            apply(bytes.withUnsafeBytes { session.upstreamBytes($0, now: now) },
                  after: "upstream \(String(decoding: bytes, as: UTF8.self).debugDescription)")
        case .upstreamEOF, .upstreamFailed:
            // EOF is read; a failure is also what a write finds, whenever the socket exists.
            guard event == .upstreamEOF ? upstreamReads : world.upstreamOpen && !world.ended else { return skipped(event) }
            world.upstreamEnded()
            deliver(event == .upstreamEOF ? .upstreamEOF : .upstreamFailed)
            invariant(!world.upstreamOpen || !session.wantsUpstreamBytes, "an upstream that ended is still read")
        case .headerTimeout:
            guard world.headerTimerArmed && !world.ended else { return skipped(event) }
            deliver(.headerTimeout)
        case .connectionLost:
            let reason = input.pick(SessionFixtures.connectionLosses) ?? .clientReset
            guard !world.ended else { return skipped(event) }
            deliver(.connectionLost(reason))
        case .reload:
            let choice = input.byte() ?? 0
            guard !world.ended else { return skipped(event) }
            reload(choice)
        }
    }

    /// Written straight to stderr, unbuffered, so a trace ends at the event that broke an
    /// invariant.
    private func trace(_ line: String) {
        let text = line + "\n"
        _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    }

    private func skipped(_ event: Event) {
        if Self.tracing { trace("  (the environment cannot produce \(event) now)") }
    }

    /// The driver reads the client only while the session wants bytes and the client is open.
    private var clientReads: Bool {
        !world.ended && !world.clientEOF && session.wantsClientBytes
    }

    /// And the upstream only while connected, not at EOF, and wanted.
    private var upstreamReads: Bool {
        !world.ended && world.upstreamOpen && !world.upstreamDone && session.wantsUpstreamBytes
    }

    private mutating func deliver(_ event: ProxySessionEvent) {
        apply(session.handle(event, now: now), after: "\(event)")
    }

    private mutating func apply(_ actions: [ProxySessionAction], after cause: @autoclosure () -> String) {
        if Self.tracing {
            trace("  \(cause()) -> \(actions.map(SessionScript.describe))")
        }
        world.apply(actions, to: &session)
    }

    /// Bytes as text, so a trace reads like the exchange it was.
    private static func describe(_ action: ProxySessionAction) -> String {
        switch action {
        case .sendToClient(let bytes): return "sendToClient(\(String(decoding: bytes, as: UTF8.self).debugDescription))"
        case .sendToUpstream(let bytes): return "sendToUpstream(\(String(decoding: bytes, as: UTF8.self).debugDescription))"
        default: return "\(action)"
        }
    }

    private mutating func reload(_ choice: UInt8) {
        if choice & 1 != 0 {
            session.useRegistry(choice & 2 != 0 ? SessionFixtures.narrowerRegistry : SessionFixtures.registry)
        }
        if choice & 4 != 0 {
            let version = self.version
            world.requiresAuth = choice & 8 != 0
            session.useAuth(required: world.requiresAuth, credentialsVersion: { version.current })
        }
        if choice & 16 != 0 {
            version.advance()
        }
    }

    /// The connection goes, every owed commit is answered (stored), and the audit trail must
    /// then be whole: each stored open row closed or handed to a tunnel, each place back.
    private mutating func finish() {
        if !world.ended {
            deliver(.connectionLost(.shutdown))
        }
        while world.answeredCommit(true) {
            deliver(.auditCommitted)
        }
        for row in world.openRows where row.committed == true {
            invariant(row.closed || row.tunnelled, "open row \(row) never got its close row")
        }
        for place in world.tunnelPlaces {
            place.release()
        }
        if let quota {
            for principal in SessionFixtures.principals {
                let key = NTLMUserName.comparisonKey(principal.name)
                invariant(quota.openCount(key) == 0, "\(principal.name) still holds \(quota.openCount(key)) tunnel places")
            }
        }
    }
}
