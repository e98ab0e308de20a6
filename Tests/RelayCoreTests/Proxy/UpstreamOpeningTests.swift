import Testing
@testable import RelayCore

/// The upstream-opening machine shared by proxy sessions and static forwards, event by
/// event with no sockets: every order of the open row's commit and the connects, failures
/// before and after the commit, a connection that ends at any point, and late answers.
@Suite struct UpstreamOpeningTests {
    typealias Opening = UpstreamOpening

    static let registry: Registry = {
        let text = """
        listen 127.0.0.1:0
        server 10.1.2.3:443
        server app.corp.example:80
        deny 10.9.9.0/24
        server 10.9.0.0/16:*
        """
        return try! ConfigParser.parse(text: text, file: "open.conf") { _, _ in [] }.registry
    }()

    static let a = IPAddress.v4(IPv4Address(10, 9, 1, 1))
    static let b = IPAddress.v4(IPv4Address(10, 9, 1, 2))
    static let c = IPAddress.v4(IPv4Address(10, 9, 1, 3))

    /// An attempt at the registered name, resolved to `addresses`.
    static func resolved(_ addresses: [IPAddress], openRow: Opening.OpenRow = .toWrite) -> (Opening, Opening.Action) {
        var (opening, first) = Opening.start(host: .name("app.corp.example"), port: 80, rule: "open.conf:3",
                                             openRow: openRow, checkedBy: registry, localHost: nil)
        #expect(first == .resolve(name: "app.corp.example"))
        let action = opening.resolved(addresses, checkedBy: registry, localHost: nil)
        return (opening, action)
    }

    // MARK: Starting

    @Test func aLiteralAddressIsCheckedAtOnceAndConnectedWhileItsOpenRowIsWritten() {
        var (opening, action) = Opening.start(host: .ipv4(IPv4Address(10, 1, 2, 3)), port: 443, rule: "open.conf:2",
                                              openRow: .toWrite, checkedBy: Self.registry, localHost: nil)
        #expect(action == .writeOpenRowAndConnect(.v4(IPv4Address(10, 1, 2, 3))))
        #expect(opening.isConnecting && opening.connectingTo == .v4(IPv4Address(10, 1, 2, 3)))
        #expect(opening.handle(.openRowCommitted) == .wait)
        #expect(opening.handle(.connected) == .relay)
        #expect(!opening.isConnecting && !opening.isAbandoned)
    }

    @Test func aRetryUnderAStoredOpenRowOnlyConnects() {
        var (opening, action) = Self.resolved([Self.a, Self.b], openRow: .stored)
        #expect(action == .connect(Self.a))
        #expect(opening.handle(.connectFailed(.upstreamRefused)) == .connect(Self.b))
        #expect(opening.handle(.connected) == .relay, "the open row is stored already: nothing to wait for")
    }

    @Test func oneRefusedAddressRefusesTheAnswerNamingItAndItsRule() {
        let denied = IPAddress.v4(IPv4Address(10, 9, 9, 7))
        let guarded = IPAddress.v4(IPv4Address(169, 254, 169, 254))
        for openRow in [Opening.OpenRow.toWrite, .stored] {
            let (_, deny) = Self.resolved([Self.a, denied], openRow: openRow)
            let refusedByRule = Opening.RefusedAddress(address: denied, rule: "open.conf:4")
            #expect(deny == (openRow == .stored ? .failOpened(.denied, refusedByRule) : .refuse(.denied, refusedByRule)))
            let (_, guardAction) = Self.resolved([guarded, Self.a], openRow: openRow)
            let refusedByGuard = Opening.RefusedAddress(address: guarded, rule: nil)
            #expect(guardAction == (openRow == .stored ? .failOpened(.guardedAddress, refusedByGuard)
                                                       : .refuse(.guardedAddress, refusedByGuard)))
        }
    }

    @Test func noAddressOrAFailedResolutionIsResolveFailed() {
        #expect(Self.resolved([]).1 == .refuse(.resolveFailed, nil))
        #expect(Self.resolved([], openRow: .stored).1 == .failOpened(.resolveFailed, nil))
        for openRow in [Opening.OpenRow.toWrite, .stored] {
            var (opening, _) = Opening.start(host: .name("app.corp.example"), port: 80, rule: "open.conf:3",
                                             openRow: openRow, checkedBy: Self.registry, localHost: nil)
            #expect(opening.handle(.resolveFailed) == (openRow == .stored ? .failOpened(.resolveFailed, nil)
                                                                          : .refuse(.resolveFailed, nil)))
            #expect(opening.handle(.resolveFailed) == .ignore, "late")
        }
    }

    // MARK: The commit and the connects

    @Test func theRelayWaitsForBothInEitherOrder() {
        for commitFirst in [true, false] {
            var (opening, _) = Self.resolved([Self.a])
            let first: Opening.Event = commitFirst ? .openRowCommitted : .connected
            let second: Opening.Event = commitFirst ? .connected : .openRowCommitted
            #expect(opening.handle(first) == .wait)
            #expect(opening.handle(second) == .relay)
        }
    }

    @Test func connectFailuresTryEachCheckedAddressInOrder() {
        var (opening, action) = Self.resolved([Self.a, Self.b, Self.c])
        #expect(action == .writeOpenRowAndConnect(Self.a))
        #expect(opening.handle(.connectFailed(.upstreamRefused)) == .connect(Self.b))
        #expect(opening.connectingTo == Self.b)
        #expect(opening.handle(.openRowCommitted) == .wait)
        #expect(opening.handle(.connectFailed(.upstreamTimeout)) == .connect(Self.c))
        #expect(opening.handle(.connectFailed(.upstreamUnreachable)) == .failOpened(.upstreamUnreachable, nil),
                "the last failure is the reason, in the close row of the stored open row")
    }

    /// A close row only for a stored open row: every address failing first makes the
    /// failure wait for the commit, which decides between a close row and a refusal row.
    @Test func aFailureBeforeTheCommitWaitsForIt() {
        for committed in [true, false] {
            var (opening, _) = Self.resolved([Self.a, Self.b])
            #expect(opening.handle(.connectFailed(.upstreamRefused)) == .connect(Self.b))
            #expect(opening.handle(.connectFailed(.upstreamTimeout)) == .failureWaitsForOpenRow(.upstreamTimeout))
            #expect(!opening.isConnecting)
            #expect(opening.handle(committed ? .openRowCommitted : .openRowFailed)
                    == (committed ? .failOpened(.upstreamTimeout, nil) : .refuse(.internalError, nil)))
        }
    }

    @Test func aFailedCommitRelaysNothingWhateverTheConnectDid() {
        var (connecting, _) = Self.resolved([Self.a])
        #expect(connecting.handle(.openRowFailed) == .refuse(.internalError, nil))
        #expect(connecting.handle(.connected) == .closeLateConnection, "the connect outstanding is closed when it lands")
        var (connected, _) = Self.resolved([Self.a])
        #expect(connected.handle(.connected) == .wait)
        #expect(connected.handle(.openRowFailed) == .refuse(.internalError, nil))
    }

    // MARK: The connection ending first

    @Test func endingWhileResolvingRecordsTheAttempt() {
        var (unopened, _) = Opening.start(host: .name("app.corp.example"), port: 80, rule: "open.conf:3", openRow: .toWrite,
                                          checkedBy: Self.registry, localHost: nil)
        #expect(unopened.handle(.abandoned(.idleTimeout)) == .closeUnopened(.idleTimeout))
        #expect(unopened.resolved([Self.a], checkedBy: Self.registry, localHost: nil) == .ignore,
                "a resolution cannot be cancelled: its answer comes late")
        var (retried, _) = Opening.start(host: .name("app.corp.example"), port: 80, rule: "open.conf:3", openRow: .stored,
                                         checkedBy: Self.registry, localHost: nil)
        #expect(retried.handle(.abandoned(.clientReset)) == .closeOpened(.clientReset))
    }

    @Test func endingAfterTheCommitClosesTheOpenRowAtOnce() {
        var (opening, _) = Self.resolved([Self.a])
        _ = opening.handle(.openRowCommitted)
        #expect(opening.handle(.abandoned(.shutdown)) == .closeOpened(.shutdown))
        #expect(opening.handle(.connectFailed(.upstreamRefused)) == .ignore, "the cancelled connect's failure is late")
        #expect(opening.handle(.abandoned(.idleTimeout)) == .ignore, "ended once")
    }

    @Test(arguments: [false, true])
    func endingBeforeTheCommitClosesNowAndTheCommitSettlesTheRow(connected: Bool) {
        for committed in [true, false] {
            var (opening, _) = Self.resolved([Self.a])
            if connected { #expect(opening.handle(.connected) == .wait) }
            #expect(opening.handle(.abandoned(.clientReset)) == .closeWhileOpenRowPending)
            #expect(opening.isAbandoned && !opening.isConnecting)
            #expect(opening.handle(.abandoned(.shutdown)) == .ignore, "a second ending changes nothing")
            #expect(opening.handle(.connected) == .closeLateConnection)
            #expect(opening.handle(.connectFailed(.upstreamRefused)) == .ignore)
            #expect(opening.handle(committed ? .openRowCommitted : .openRowFailed)
                    == (committed ? .recordClose(.clientReset) : .recordRefusal(.internalError)))
            #expect(!opening.isAbandoned)
        }
    }

    @Test func aConnectFailureThatEndedTheAttemptStaysItsReason() {
        var (opening, _) = Self.resolved([Self.a])
        _ = opening.handle(.connectFailed(.upstreamRefused))
        #expect(opening.handle(.abandoned(.shutdown)) == .closeWhileOpenRowPending)
        #expect(opening.handle(.openRowCommitted) == .recordClose(.upstreamRefused))
    }

    // MARK: No connect

    @Test func anUpstreamThatNeedsNoConnectWaitsForItsOpenRowOnly() {
        var (relayed, first) = Opening.withoutConnect()
        #expect(first == .writeOpenRow)
        #expect(!relayed.isConnecting && relayed.connectingTo == nil)
        #expect(relayed.handle(.openRowCommitted) == .relay)
        var (refused, _) = Opening.withoutConnect()
        #expect(refused.handle(.openRowFailed) == .refuse(.internalError, nil))
        var (lost, _) = Opening.withoutConnect()
        #expect(lost.handle(.abandoned(.clientReset)) == .closeWhileOpenRowPending)
        #expect(lost.handle(.openRowCommitted) == .recordClose(.clientReset))
    }

    // MARK: Every order

    /// What the environment can still answer: the connect outstanding, the open row's
    /// commit, and the connection's end (until it has ended).
    struct Environment {
        var connectOutstanding = true
        var commitOutstanding = true
        var ended = false
        var stored: Bool?
        var connectsLeft: Int
        /// The row outcomes seen so far, and whether a relay started.
        var rows: [Opening.Action] = []
        var relayed = false
    }

    /// Runs every sequence of answers a driver can give an attempt with `candidates`
    /// addresses (each connect succeeding or failing, the commit storing or failing, the
    /// connection ending at any point, late answers after that) and checks each step.
    @Test(arguments: [1, 2, 3])
    func everyOrderOfAnswersKeepsTheTrailWhole(candidates: Int) {
        let addresses = [Self.a, Self.b, Self.c].prefix(candidates)
        let (opening, first) = Self.resolved(Array(addresses))
        #expect(first == .writeOpenRowAndConnect(Self.a))
        var sequences = 0
        Self.explore(opening, Environment(connectsLeft: candidates - 1), trail: [], sequences: &sequences)
        #expect(sequences > candidates * 4, "\(sequences) sequences")
    }

    static func explore(_ opening: Opening, _ environment: Environment, trail: [Opening.Event], sequences: inout Int) {
        var events: [Opening.Event] = []
        if environment.connectOutstanding { events += [.connected, .connectFailed(.upstreamRefused)] }
        if environment.commitOutstanding { events += [.openRowCommitted, .openRowFailed] }
        if !environment.ended { events.append(.abandoned(.clientReset)) }
        guard !events.isEmpty else {
            sequences += 1
            return check(final: environment, trail: trail)
        }
        for event in events {
            var next = opening
            var env = environment
            let action = next.handle(event)
            let steps = trail + [event]
            apply(action, after: event, to: &env, trail: steps)
            if env.ended, !environment.ended {
                // Late answers once the attempt is over change nothing but closing what connects.
                var late = next
                #expect(late.handle(.abandoned(.shutdown)) == .ignore, "\(steps)")
                if !late.isAbandoned {
                    #expect(late.resolved([Self.a], checkedBy: registry, localHost: nil) == .ignore, "\(steps)")
                }
                if env.connectOutstanding {
                    var connects = late
                    #expect(connects.handle(.connected) == .closeLateConnection, "\(steps)")
                    #expect(late.handle(.connectFailed(.upstreamTimeout)) == .ignore, "\(steps)")
                }
                // A driver that ends cancels its connect: no answer comes after.
                env.connectOutstanding = false
            }
            explore(next, env, trail: steps, sequences: &sequences)
        }
    }

    static func apply(_ action: Opening.Action, after event: Opening.Event, to env: inout Environment, trail: [Opening.Event]) {
        switch event {
        case .connected: env.connectOutstanding = false
        case .connectFailed: env.connectOutstanding = false
        case .openRowCommitted: env.commitOutstanding = false; env.stored = true
        case .openRowFailed: env.commitOutstanding = false; env.stored = false
        case .abandoned: break
        case .resolveFailed: Issue.record("no resolution in these sequences")
        }
        switch action {
        case .connect:
            #expect(env.connectsLeft > 0, "\(trail)")
            env.connectsLeft -= 1
            env.connectOutstanding = true
        case .wait, .failureWaitsForOpenRow:
            #expect(!env.ended, "\(trail)")
        case .relay:
            #expect(env.stored == true && !env.connectOutstanding, "relayed only with the row stored and connected: \(trail)")
            env.relayed = true
            env.ended = true
        case .failOpened, .closeOpened, .recordClose:
            #expect(env.stored == true, "a close row only for a stored open row: \(trail)")
            env.rows.append(action)
            env.ended = true
        case .refuse, .recordRefusal:
            #expect(env.stored == false, "a refusal stands for an open row that was not stored: \(trail)")
            env.rows.append(action)
            env.ended = true
        case .closeWhileOpenRowPending:
            #expect(env.commitOutstanding, "\(trail)")
            env.ended = true
        case .ignore, .closeLateConnection:
            Issue.record("no late answer is explored here: \(trail) gave \(action)")
        case .resolve, .writeOpenRowAndConnect, .writeOpenRow, .closeUnopened:
            Issue.record("\(action) after \(trail)")
        }
    }

    static func check(final env: Environment, trail: [Opening.Event]) {
        #expect(env.rows.count + (env.relayed ? 1 : 0) == 1, "exactly one outcome: \(trail) gave \(env.rows), relayed \(env.relayed)")
        #expect(!env.commitOutstanding, "\(trail)")
    }
}
