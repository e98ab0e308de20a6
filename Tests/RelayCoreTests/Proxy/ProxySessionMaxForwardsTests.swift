import Testing
@testable import RelayCore

/// TRACE and OPTIONS with `Max-Forwards` (RFC 9110 7.6.2): answered by the relay at zero,
/// after the same checks and records as a forwarded request; decremented otherwise.
@Suite struct ProxySessionMaxForwardsTests {
    static let secrets = "Proxy-Authorization: Basic c2VjcmV0\r\nAuthorization: Bearer s3cr3t-token\r\nCookie: sid=s3cr3t\r\n"
        + "X-Api-Key: s3cr3t-key\r\nX-Auth-Token: s3cr3t\r\nX-Carried: Basic c2VjcmV0\r\n"

    static func run(_ input: String, split: Int, settings: ProxySession.Settings? = nil) throws -> (ProxySession, [ProxySessionAction]) {
        var session = ProxySession(settings: try settings ?? ProxySessionTests.settings())
        let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes(input), splitAt: [split])
        return (session, actions)
    }

    static func noUpstream(_ actions: [ProxySessionAction]) -> Bool {
        !actions.contains {
            switch $0 {
            case .connect, .resolve, .sendToUpstream: return true
            default: return false
            }
        }
    }

    @Test func aTraceWithMaxForwardsZeroIsEchoedWithoutSecretsAtEverySplit() throws {
        let request = "TRACE http://app.corp.example/path?q=1 HTTP/1.1\r\nHost: app.corp.example\r\nMax-Forwards: 0\r\n"
            + Self.secrets + "Accept: */*\r\nX-Hop: kept in the echo\r\n\r\n"
        for split in 0...request.utf8.count {
            var (session, opened) = try Self.run(request, split: split)
            let open = try #require(ProxySessionTests.auditEntries(opened).first, "split \(split)")
            #expect(open.event == .requestOpen && open.decision == .allow && open.rule == "test.conf:4")
            #expect(ProxySessionTests.refusalBody(opened) == nil, "nothing is answered before the open row is stored")
            let answered = session.handle(.auditCommitted, now: 3)
            #expect(Self.noUpstream(opened + answered), "split \(split)")
            let text = try #require(ProxySessionTests.refusalBody(answered))
            let (head, echo) = try #require(Self.split(text))
            #expect(head.hasPrefix("HTTP/1.1 200 OK\r\nContent-Type: message/http\r\nContent-Length: \(echo.utf8.count)\r\n"))
            #expect(echo.hasPrefix("TRACE http://app.corp.example/path?q=1 HTTP/1.1\r\nHost: app.corp.example\r\nMax-Forwards: 0\r\n"))
            #expect(echo.hasSuffix("Accept: */*\r\nX-Hop: kept in the echo\r\n\r\n"), "\(echo)")
            #expect(!echo.contains("s3cr3t") && !echo.contains("c2VjcmV0"), "no secret is echoed: \(echo)")
            let close = try #require(ProxySessionTests.auditEntries(answered).first)
            #expect(close.event == .requestClose && close.reason == .answeredByRelay && close.status == 200)
            #expect(close.bytesDown == Int64(text.utf8.count) && close.bytesUp == 0)
            #expect(close.target == open.target && close.rule == open.rule)
            #expect(!answered.contains(.closeClient), "keep-alive")
            #expect(session.wantsClientBytes)
        }
    }

    @Test func anOptionsWithMaxForwardsZeroIs200AndTheNextRequestFollows() throws {
        let input = "OPTIONS http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nMax-Forwards: 0\r\n\r\n"
            + "GET http://10.9.1.1/next HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n"
        for split in 0...input.utf8.count {
            var (session, opened) = try Self.run(input, split: split)
            #expect(ProxySessionTests.auditEntries(opened).map(\.event) == [.requestOpen], "split \(split)")
            let answered = session.handle(.auditCommitted, now: 3)
            #expect(ProxySessionTests.refusalBody(answered) == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            #expect(ProxySessionTests.auditEntries(answered).map(\.event) == [.requestClose, .requestOpen], "the pipelined GET goes on")
            #expect(answered.last == .connect(.v4(IPv4Address(10, 9, 1, 1)), port: 80))
        }
    }

    @Test func theAnswerClosesWhenTheClientAsksOrABodyIsLeftUnread() throws {
        for request in ["OPTIONS http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nMax-Forwards: 0\r\nConnection: close\r\n\r\n",
                        "OPTIONS http://10.9.1.1/ HTTP/1.0\r\nMax-Forwards: 0\r\n\r\n",
                        "OPTIONS http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nMax-Forwards: 0\r\nContent-Length: 4\r\n\r\nbody"] {
            var (session, _) = try Self.run(request, split: 0)
            let answered = session.handle(.auditCommitted, now: 3)
            #expect(ProxySessionTests.refusalBody(answered) == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            #expect(answered.last == .closeClient, "\(request)")
        }
    }

    /// The answer is given only where the request would have been forwarded: an unregistered
    /// or denied target is refused as always.
    @Test func theRegistryDecidesFirst() throws {
        for (target, reason) in [("evil.example", ReasonCode.notRegistered), ("10.9.9.7", .denied)] {
            let (_, actions) = try Self.run("TRACE http://\(target)/ HTTP/1.1\r\nHost: \(target)\r\nMax-Forwards: 0\r\n\r\n", split: 0)
            #expect(ProxySessionTests.auditEntries(actions).map(\.reason) == [reason])
            #expect(ProxySessionTests.refusalBody(actions)?.hasPrefix("HTTP/1.1 403 ") == true)
        }
    }

    @Test func authenticationComesFirst() throws {
        var settings = try ProxySessionTests.settings()
        settings.requiresAuth = true
        var (session, asked) = try Self.run("OPTIONS http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nMax-Forwards: 0\r\n"
                                            + "Proxy-Authorization: Basic YTpi\r\n\r\n", split: 0, settings: settings)
        #expect(asked.count == 1)
        guard case .authenticate = asked.first else {
            Issue.record("expected the credentials to be checked first, got \(asked)")
            return
        }
        let principal = AuthPrincipal(name: "alice", scheme: "Basic")
        let opened = session.handle(.authFinished(.granted(principal, scope: .request, mutualAuth: nil)), now: 2)
        let open = try #require(ProxySessionTests.auditEntries(opened).first)
        #expect(open.principal == "alice")
        let close = try #require(ProxySessionTests.auditEntries(session.handle(.auditCommitted, now: 3)).first)
        #expect(close.principal == "alice" && close.reason == .answeredByRelay)
    }

    /// Every open row keeps exactly one close row, as for a forwarded request.
    @Test func aFailedCommitOrALostClientSettlesTheRecordOnce() throws {
        let request = "TRACE http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nMax-Forwards: 0\r\n\r\n"
        var (failing, _) = try Self.run(request, split: 0)
        let failed = failing.handle(.auditFailed, now: 3)
        #expect(ProxySessionTests.auditEntries(failed).map(\.event) == [.refused])
        #expect(ProxySessionTests.refusalBody(failed)?.hasPrefix("HTTP/1.1 500 ") == true)

        for committed in [true, false] {
            var (lost, _) = try Self.run(request, split: 0)
            let gone = lost.handle(.connectionLost(.clientReset), now: 3)
            #expect(ProxySessionTests.auditEntries(gone).isEmpty && gone.last == .closeClient)
            let settled = lost.handle(committed ? .auditCommitted : .auditFailed, now: 4)
            #expect(ProxySessionTests.auditEntries(settled).map(\.event) == [committed ? .requestClose : .refused])
            #expect(ProxySessionTests.refusalBody(settled) == nil)
        }
    }

    @Test("a count above zero is decremented when forwarded", arguments: [
        ("TRACE", "5", "4"), ("OPTIONS", "1", "0"), ("OPTIONS", "007", "6"), ("TRACE", "99999999999999999999999", "255"),
        ("TRACE", "256", "255"), ("TRACE", "255", "254"),
    ])
    func decremented(method: String, received: String, forwarded: String) throws {
        var session = ProxySession(settings: try ProxySessionTests.settings())
        let sent = String(decoding: ProxySessionTests.forwarded(&session, "\(method) http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\n"
                                                               + "Max-Forwards: \(received)\r\nAccept: */*\r\n\r\n"), as: UTF8.self)
        #expect(sent.contains("\r\nMax-Forwards: \(forwarded)\r\n"), "\(sent)")
        #expect(sent.components(separatedBy: "Max-Forwards").count == 2, "one field")
    }

    @Test func otherMethodsForwardMaxForwardsUntouched() throws {
        var session = ProxySession(settings: try ProxySessionTests.settings())
        let sent = String(decoding: ProxySessionTests.forwarded(&session, "GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\n"
                                                               + "Max-Forwards: 0\r\n\r\n"), as: UTF8.self)
        #expect(sent.hasPrefix("GET / HTTP/1.1\r\n") && sent.contains("\r\nMax-Forwards: 0\r\n"))
    }

    @Test("an invalid or repeated Max-Forwards is 400", arguments: [
        "Max-Forwards: abc\r\n", "Max-Forwards: -1\r\n", "Max-Forwards: 1, 2\r\n", "Max-Forwards: +1\r\n", "Max-Forwards: 1 2\r\n",
        "Max-Forwards:\r\n", "Max-Forwards: 0\r\nMax-Forwards: 0\r\n", "Max-Forwards: 3\r\nmax-forwards: 0\r\n",
    ])
    func invalid(field: String) throws {
        for method in ["TRACE", "OPTIONS"] {
            try ProxySessionConformanceTests.expectRefused("\(method) http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\n\(field)\r\n",
                                                           status: 400, reason: .badHeader)
        }
    }

    /// Head and body of a response text.
    static func split(_ text: String) -> (String, String)? {
        guard let range = text.range(of: "\r\n\r\n") else { return nil }
        return (String(text[..<range.upperBound]), String(text[range.upperBound...]))
    }
}
