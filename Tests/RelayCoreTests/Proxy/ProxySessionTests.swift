import Testing
@testable import RelayCore

/// Drives `ProxySession` byte by byte, with no sockets: CONNECT, resolution and the opening
/// of the upstream, refusals, a lost connection; and the helpers every session suite uses.
@Suite struct ProxySessionTests {
    static let config = """
    listen 127.0.0.1:0
    state-dir /tmp/unused
    server 10.1.2.3:443
    server app.corp.example:80
    server .intranet.example:8080-8089
    server 10.9.0.0/16:*
    deny 10.9.9.0/24
    server localhost:80
    """

    static func settings() throws -> ProxySession.Settings {
        let config = try ConfigParser.parse(text: config, file: "test.conf") { _, _ in [] }
        return ProxySession.Settings(registry: config.registry)
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Feeds `input` split into `pieces` at the given offsets; returns all actions in order.
    static func feed(_ session: inout ProxySession, _ input: [UInt8], splitAt offsets: [Int] = []) -> [ProxySessionAction] {
        var actions: [ProxySessionAction] = []
        var start = 0
        for end in offsets + [input.count] where end >= start {
            actions += input[start..<end].withUnsafeBytes { session.clientBytes($0, now: 1_000_000) }
            start = end
        }
        return actions
    }

    static func upstream(_ session: inout ProxySession, _ text: String) -> [ProxySessionAction] {
        bytes(text).withUnsafeBytes { session.upstreamBytes($0, now: 2_000_000) }
    }

    static func refusalBody(_ actions: [ProxySessionAction]) -> String? {
        for case .sendToClient(let bytes) in actions {
            return String(decoding: bytes, as: UTF8.self)
        }
        return nil
    }

    static func auditEntries(_ actions: [ProxySessionAction]) -> [AuditEntry] {
        actions.compactMap { if case .audit(let entry, _) = $0 { return entry } else { return nil } }
    }

    // MARK: CONNECT

    @Test func connectToRegisteredAddressAtEverySplit() throws {
        let head = Self.bytes("CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\n\r\n")
        for split in 0...head.count {
            var session = ProxySession(settings: try Self.settings())
            let actions = Self.feed(&session, head, splitAt: [split])
            let connects = actions.filter { if case .connect = $0 { return true } else { return false } }
            #expect(connects == [.connect(.v4(IPv4Address(strict: "10.1.2.3")!), port: 443)], "split \(split)")
            #expect(!session.wantsClientBytes)
        }
    }

    @Test func openRecordIsWrittenWhileConnectingAndTheTunnelWaitsForBoth() throws {
        let clientHello = [UInt8](repeating: 0x16, count: 7)
        for commitFirst in [true, false] {
            var session = ProxySession(settings: try Self.settings())
            let first = Self.feed(&session, Self.bytes("CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\n\r\n") + clientHello)
            guard case .audit(let entry, let awaitCommit) = first.first else {
                Issue.record("expected the open record first, got \(first)")
                return
            }
            #expect(awaitCommit)
            #expect(entry.event == .tunnelOpen)
            #expect(entry.rule == "test.conf:3")
            #expect(entry.target == "10.1.2.3:443")
            #expect(entry.resolved == "10.1.2.3:443")
            #expect(first.dropFirst().first == .connect(.v4(IPv4Address(strict: "10.1.2.3")!), port: 443))

            let firstOutcome: ProxySessionEvent = commitFirst ? .auditCommitted : .upstreamConnected
            let secondOutcome: ProxySessionEvent = commitFirst ? .upstreamConnected : .auditCommitted
            #expect(session.handle(firstOutcome, now: 5_000_000).isEmpty, "nothing is relayed after only one of them")
            let ready = session.handle(secondOutcome, now: 6_000_000)
            guard case .startTunnel(let context, let established, let leftover) = ready.first else {
                Issue.record("expected startTunnel, got \(ready)")
                return
            }
            #expect(String(decoding: established, as: UTF8.self) == "HTTP/1.1 200 Connection established\r\n\r\n")
            #expect(leftover == clientHello)
            #expect(context.startedAt == 1_000_000)
            #expect(session.isFinished)
        }
    }

    @Test func auditFailureRelaysNothing() throws {
        var session = ProxySession(settings: try Self.settings())
        _ = Self.feed(&session, Self.bytes("CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\n\r\n"))
        _ = session.handle(.upstreamConnected, now: 2)
        let actions = session.handle(.auditFailed, now: 3)
        #expect(Self.refusalBody(actions)?.hasPrefix("HTTP/1.1 500") == true)
        #expect(actions.contains(.closeUpstream))
        #expect(actions.last == .closeClient)
        #expect(!actions.contains { if case .startTunnel = $0 { return true } else { return false } })
    }

    @Test func unregisteredIsRefusedWithReasonInBodyAndAudit() throws {
        var session = ProxySession(settings: try Self.settings())
        let actions = Self.feed(&session, Self.bytes("CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n"))
        let body = try #require(Self.refusalBody(actions))
        #expect(body.hasPrefix("HTTP/1.1 403 "))
        #expect(body.hasSuffix("\r\n\r\nnot-registered\n"))
        let entry = try #require(Self.auditEntries(actions).first)
        #expect(entry.event == .refused)
        #expect(entry.decision == .deny)
        #expect(entry.reason == .notRegistered)
        #expect(entry.status == 403)
        #expect(entry.target == "evil.example:443")
        #expect(actions.last == .closeClient)
    }

    @Test func explicitDenyNamesItsRule() throws {
        var session = ProxySession(settings: try Self.settings())
        let actions = Self.feed(&session, Self.bytes("CONNECT 10.9.9.7:22 HTTP/1.1\r\nHost: 10.9.9.7:22\r\n\r\n"))
        let entry = try #require(Self.auditEntries(actions).first)
        #expect(entry.reason == .denied)
        #expect(entry.rule == "test.conf:7")
        #expect(Self.refusalBody(actions)?.hasSuffix("denied\n") == true)
    }

    @Test func ambiguousLiteralsAre400() throws {
        for host in ["2130706433", "0x7f.0.0.1", "0177.0.0.1", "127.1", "[::ffff:10.1.2.3]", "[fe80::1%25eth0]", "app%2ecorp.example",
                     "[::10.1.2.3]", "[::ffff:0:10.1.2.3]", "[64:ff9b::10.1.2.3]", "[64:ff9b:1::10.1.2.3]", "[2002:a01:203::]",
                     "[2001:0:a01:203::1]", "[2001:db8::5efe:10.1.2.3]"] {
            var session = ProxySession(settings: try Self.settings())
            let actions = Self.feed(&session, Self.bytes("CONNECT \(host):443 HTTP/1.1\r\nHost: \(host):443\r\n\r\n"))
            let body = Self.refusalBody(actions) ?? ""
            #expect(body.hasPrefix("HTTP/1.1 400 "), "\(host): \(body)")
            #expect(!actions.contains { if case .connect = $0 { return true } else { return false } }, "\(host)")
        }
    }

    @Test func connectWithABodyIsAmbiguous() throws {
        var session = ProxySession(settings: try Self.settings())
        let actions = Self.feed(&session, Self.bytes("CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\nContent-Length: 3\r\n\r\nabc"))
        #expect(Self.auditEntries(actions).first?.reason == .ambiguousFraming)
    }

    // MARK: Resolution

    @Test func registeredNameResolvingToLoopbackIsGuarded() throws {
        var session = ProxySession(settings: try Self.settings())
        let first = Self.feed(&session, Self.bytes("CONNECT localhost:80 HTTP/1.1\r\nHost: localhost:80\r\n\r\n"))
        #expect(first == [.resolve(name: "localhost", port: 80)])
        let actions = session.handle(.resolved([.v4(IPv4Address(strict: "127.0.0.1")!)]), now: 2)
        let entry = try #require(Self.auditEntries(actions).first)
        #expect(entry.reason == .guardedAddress)
        #expect(entry.resolved == "127.0.0.1:80")
        #expect(Self.refusalBody(actions)?.hasPrefix("HTTP/1.1 403") == true)
    }

    @Test func oneRefusedAddressRefusesTheWholeAnswer() throws {
        var session = ProxySession(settings: try Self.settings())
        _ = Self.feed(&session, Self.bytes("CONNECT app.corp.example:80 HTTP/1.1\r\nHost: app.corp.example:80\r\n\r\n"))
        let actions = session.handle(.resolved([.v4(IPv4Address(strict: "10.1.2.3")!),
                                                .v4(IPv4Address(strict: "169.254.169.254")!)]), now: 2)
        #expect(Self.auditEntries(actions).first?.reason == .guardedAddress)
        #expect(!actions.contains { if case .connect = $0 { return true } else { return false } })
    }

    @Test func connectFailureTriesTheNextCheckedAddressThenRefuses() throws {
        var session = ProxySession(settings: try Self.settings())
        _ = Self.feed(&session, Self.bytes("CONNECT app.corp.example:80 HTTP/1.1\r\nHost: app.corp.example:80\r\n\r\n"))
        let a = IPAddress.v4(IPv4Address(strict: "10.1.2.3")!)
        let b = IPAddress.v4(IPv4Address(strict: "10.1.2.4")!)
        let opening = session.handle(.resolved([a, b]), now: 2)
        #expect(Self.auditEntries(opening).map(\.event) == [.tunnelOpen])
        #expect(opening.last == .connect(a, port: 80))
        #expect(session.handle(.auditCommitted, now: 2).isEmpty)
        #expect(session.handle(.upstreamConnectFailed(.upstreamRefused), now: 3) == [.connect(b, port: 80)])
        let actions = session.handle(.upstreamConnectFailed(.upstreamTimeout), now: 4)
        #expect(Self.refusalBody(actions)?.hasPrefix("HTTP/1.1 504") == true)
        // The open row was written, so the failure is its close row: every open has one close.
        let close = try #require(Self.auditEntries(actions).first)
        #expect(close.event == .tunnelClose)
        #expect(close.reason == .upstreamTimeout)
        #expect(close.status == 504)
        #expect(close.resolved == "10.1.2.4:80")
    }

    /// A close row is written only for an open row that is stored: when every address fails
    /// before the open row's commit answers, the refusal waits for that answer.
    @Test func connectFailureBeforeTheCommitWaitsForIt() throws {
        for committed in [true, false] {
            var session = ProxySession(settings: try Self.settings())
            _ = Self.feed(&session, Self.bytes("CONNECT app.corp.example:80 HTTP/1.1\r\nHost: app.corp.example:80\r\n\r\n"))
            let a = IPAddress.v4(IPv4Address(strict: "10.1.2.3")!)
            _ = session.handle(.resolved([a]), now: 2)
            #expect(session.handle(.upstreamConnectFailed(.upstreamRefused), now: 3).isEmpty,
                    "nothing is answered or recorded before the open row's commit")
            let actions = session.handle(committed ? .auditCommitted : .auditFailed, now: 4)
            let entries = Self.auditEntries(actions)
            if committed {
                #expect(entries.map(\.event) == [.tunnelClose])
                #expect(entries.first?.reason == .upstreamRefused)
                #expect(Self.refusalBody(actions)?.hasPrefix("HTTP/1.1 502") == true)
            } else {
                #expect(entries.map(\.event) == [.refused], "no close row for an open row that was never stored")
                #expect(entries.first?.reason == .internalError)
                #expect(Self.refusalBody(actions)?.hasPrefix("HTTP/1.1 500") == true)
            }
            #expect(actions.last == .closeClient)
            #expect(session.isFinished)
        }
    }

    /// A client lost (or aborted at shutdown) while its open row's commit is pending: the
    /// sockets close at once, and the close row follows the commit; a failed commit makes the
    /// attempt a refusal instead, so it is neither lost from the trail nor closed unopened.
    @Test(arguments: [false, true])
    func connectionLostBeforeTheCommitWaitsForIt(everyConnectFailed: Bool) throws {
        for (committed, lostFor) in [(true, ReasonCode.clientReset), (false, .clientReset), (true, .shutdown), (false, .shutdown)] {
            var session = ProxySession(settings: try Self.settings())
            _ = Self.feed(&session, Self.bytes("CONNECT app.corp.example:80 HTTP/1.1\r\nHost: app.corp.example:80\r\n\r\n"))
            _ = session.handle(.resolved([.v4(IPv4Address(strict: "10.1.2.3")!)]), now: 2)
            if everyConnectFailed {
                _ = session.handle(.upstreamConnectFailed(.upstreamRefused), now: 3)
            }
            let lost = session.handle(.connectionLost(lostFor), now: 4)
            #expect(Self.auditEntries(lost).isEmpty, "no row before the open row's commit answers")
            #expect(lost.last == .closeClient)
            #expect(session.isFinished)
            let settled = session.handle(committed ? .auditCommitted : .auditFailed, now: 5)
            let entries = Self.auditEntries(settled)
            if committed {
                #expect(entries.map(\.event) == [.tunnelClose])
                #expect(entries.first?.reason == (everyConnectFailed ? .upstreamRefused : lostFor),
                        "the connect failure that ended the attempt is its reason")
            } else {
                #expect(entries.map(\.event) == [.refused])
                #expect(entries.first?.reason == .internalError)
            }
            #expect(!settled.contains(.closeClient), "the sockets are closed already")
            #expect(session.handle(.auditCommitted, now: 6).isEmpty, "settled once")
        }
    }

    @Test func connectionLostWhileResolvingIsRecorded() throws {
        var session = ProxySession(settings: try Self.settings())
        let first = Self.feed(&session, Self.bytes("CONNECT app.corp.example:80 HTTP/1.1\r\nHost: app.corp.example:80\r\n\r\n"))
        #expect(first == [.resolve(name: "app.corp.example", port: 80)])
        let actions = session.handle(.connectionLost(.idleTimeout), now: 2)
        let entries = Self.auditEntries(actions)
        #expect(entries.map(\.event) == [.refused], "the attempt allowed by name is not missing from the trail")
        #expect(entries.first?.reason == .idleTimeout)
        #expect(entries.first?.status == nil, "no answer went out")
        #expect(Self.refusalBody(actions) == nil, "the client is gone: nothing to send")
        #expect(actions.last == .closeClient)
        #expect(session.handle(.resolved([.v4(IPv4Address(strict: "10.1.2.3")!)]), now: 3).isEmpty)
    }

    @Test func resolveFailureIs502() throws {
        var session = ProxySession(settings: try Self.settings())
        _ = Self.feed(&session, Self.bytes("CONNECT app.corp.example:80 HTTP/1.1\r\nHost: app.corp.example:80\r\n\r\n"))
        let actions = session.handle(.resolveFailed, now: 2)
        #expect(Self.refusalBody(actions)?.hasPrefix("HTTP/1.1 502") == true)
        #expect(Self.auditEntries(actions).first?.reason == .resolveFailed)
    }

    // MARK: Forwarding helpers

    /// Runs a forwarded request up to the point where its head went upstream.
    static func forwarded(_ session: inout ProxySession, _ request: String) -> [UInt8] {
        _ = feed(&session, bytes(request))
        _ = session.handle(.upstreamConnected, now: 2)
        let actions = session.handle(.auditCommitted, now: 3)
        var sent: [UInt8] = []
        for case .sendToUpstream(let part) in actions { sent += part }
        return sent
    }

    // MARK: Other refusals

    @Test func nonProxyRequestsAndUnsupportedSchemes() throws {
        let cases: [(String, ReasonCode, String)] = [
            ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", .notAProxyRequest, "400"),
            ("GET ftp://10.1.2.3/ HTTP/1.1\r\nHost: 10.1.2.3\r\n\r\n", .unsupportedScheme, "501"),
            ("GET http://10.1.2.3/ HTTP/1.1\r\nHost: 10.1.2.3\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", .ambiguousFraming, "400"),
            ("GET http://10.1.2.3/ HTTP/1.1\r\nHost: 10.1.2.3\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", .duplicateContentLength, "400"),
            ("GET http://10.1.2.3/ HTTP/1.1\r\nHost: 10.1.2.3\r\nX: a\r\n b\r\n\r\n", .obsFold, "400"),
            ("GET http://10.1.2.3/ HTTP/1.1\nX: a\r\n\r\n", .bareLineEnding, "400"),
        ]
        for (input, reason, status) in cases {
            var session = ProxySession(settings: try Self.settings())
            let actions = Self.feed(&session, Self.bytes(input))
            #expect(Self.auditEntries(actions).first?.reason == reason, "\(input)")
            #expect(Self.refusalBody(actions)?.hasPrefix("HTTP/1.1 \(status) ") == true, "\(input)")
            #expect(actions.last == .closeClient)
        }
    }

    /// No request arrived: the refusal is counted with its source's others, never a row of
    /// its own, and only a client that sent part of a head gets a 408.
    @Test func headerTimeoutIsCountedAnd408OnlyAfterAPartialHead() throws {
        var session = ProxySession(settings: try Self.settings())
        let start = Self.feed(&session, Self.bytes("CONNECT 10.1.2.3:4"))
        #expect(start == [.startHeaderTimer])
        let actions = session.handle(.headerTimeout, now: 10)
        #expect(Self.refusalBody(actions)?.hasPrefix("HTTP/1.1 408") == true)
        #expect(actions.first == .countRefusal(.headerTimeout, status: 408))
        #expect(Self.auditEntries(actions).isEmpty)

        var idle = ProxySession(settings: try Self.settings())
        #expect(idle.handle(.headerTimeout, now: 10) == [.countRefusal(.headerTimeout, status: nil), .closeClient],
                "closed without an answer: counted with no status")
    }

    @Test func oversizedHeadIsRefusedWithoutWaitingForItsEnd() throws {
        var session = ProxySession(settings: try Self.settings())
        let huge = Self.bytes("GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nX: " + String(repeating: "a", count: 40_000))
        let actions = Self.feed(&session, huge)
        #expect(Self.auditEntries(actions).first?.reason == .headTooLarge)
        #expect(Self.refusalBody(actions)?.hasPrefix("HTTP/1.1 431") == true)
    }

    @Test func clientLeavingMidBodyIsAudited() throws {
        var session = ProxySession(settings: try Self.settings())
        _ = Self.forwarded(&session, "POST http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nContent-Length: 10\r\n\r\n")
        _ = Self.feed(&session, Self.bytes("01234"))
        let actions = session.handle(.clientEOF, now: 9)
        let entry = try #require(Self.auditEntries(actions).first)
        #expect(entry.reason == .clientClosed)
        #expect(entry.bytesUp > 5)
        #expect(actions.last == .closeClient)
    }

    // MARK: Losing the connection

    @Test func losingTheConnectionWhileOpeningClosesTheOpenRow() throws {
        for input in ["CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\n\r\n", "GET http://10.9.1.1/x HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n"] {
            for committed in [false, true] {
                var session = ProxySession(settings: try Self.settings())
                let opened = Self.feed(&session, Self.bytes(input))
                let open = try #require(Self.auditEntries(opened).first)
                if committed { _ = session.handle(.auditCommitted, now: 2) }
                var actions = session.handle(.connectionLost(.shutdown), now: 3)
                #expect(actions.last == .closeClient)
                if !committed {
                    // The close row waits for the open row's commit.
                    #expect(Self.auditEntries(actions).isEmpty)
                    actions = session.handle(.auditCommitted, now: 4)
                }
                let close = try #require(Self.auditEntries(actions).first, "\(input) committed=\(committed)")
                #expect(close.event == (open.event == .tunnelOpen ? .tunnelClose : .requestClose))
                #expect(close.reason == .shutdown)
                #expect(close.target == open.target)
                #expect(Self.refusalBody(actions) == nil, "the client is gone: nothing to send")
            }
        }
    }

    // MARK: Late inputs

    /// A client may half-close once its CONNECT is sent: the opening goes on, and the
    /// tunnel carries the half-close on.
    @Test func aClientHalfClosingWhileItsTunnelOpensStillGetsIt() throws {
        var session = ProxySession(settings: try Self.settings())
        _ = Self.feed(&session, Self.bytes("CONNECT app.corp.example:80 HTTP/1.1\r\nHost: app.corp.example:80\r\n\r\n"))
        #expect(session.handle(.clientEOF, now: 2).isEmpty, "while resolving")
        _ = session.handle(.resolved([.v4(IPv4Address(10, 1, 2, 3))]), now: 3)
        #expect(session.handle(.clientEOF, now: 4).isEmpty, "while connecting")
        _ = session.handle(.upstreamConnected, now: 5)
        let ready = session.handle(.auditCommitted, now: 6)
        guard case .startTunnel = ready.first else {
            Issue.record("expected the tunnel, got \(ready)")
            return
        }
    }

    /// Answers that cannot be cancelled (a resolution, a helper's verdict, a commit) and
    /// peers or timers racing the close change nothing once the session closed; a connect
    /// that completes all the same is closed.
    @Test func lateInputsAfterTheCloseChangeNothingButCloseWhatConnected() throws {
        var session = ProxySession(settings: try Self.settings())
        _ = Self.feed(&session, Self.bytes("CONNECT app.corp.example:80 HTTP/1.1\r\nHost: app.corp.example:80\r\n\r\n"))
        _ = session.handle(.connectionLost(.clientReset), now: 2)
        #expect(session.isFinished)
        let late: [ProxySessionEvent] = [
            .resolved([.v4(IPv4Address(10, 1, 2, 3))]), .resolveFailed, .upstreamConnectFailed(.upstreamRefused),
            .auditCommitted, .auditFailed, .authFinished(.granted(AuthPrincipal(name: "a", scheme: "Basic"), scope: .request)),
            .headerTimeout, .clientEOF, .upstreamEOF, .upstreamFailed, .connectionLost(.shutdown),
        ]
        for event in late {
            #expect(session.handle(event, now: 3).isEmpty, "\(event)")
        }
        #expect(session.handle(.upstreamConnected, now: 3) == [.closeUpstream])
        #expect(Self.bytes("x").withUnsafeBytes { session.clientBytes($0, now: 3) }.isEmpty)
        #expect(Self.upstream(&session, "y").isEmpty)
    }

    /// The connection lost while its open row's commit is pending: a connect completing
    /// then is closed, and the commit still settles the record once.
    @Test func aConnectCompletingAfterTheClientLeftIsClosed() throws {
        var session = ProxySession(settings: try Self.settings())
        _ = Self.feed(&session, Self.bytes("CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\n\r\n"))
        let lost = session.handle(.connectionLost(.clientReset), now: 2)
        #expect(lost.contains(.closeUpstream), "the connect under way is abandoned")
        #expect(session.handle(.upstreamConnected, now: 3) == [.closeUpstream])
        #expect(session.handle(.upstreamConnectFailed(.upstreamRefused), now: 3).isEmpty)
        #expect(Self.auditEntries(session.handle(.auditCommitted, now: 4)).map(\.event) == [.tunnelClose])
    }
}
