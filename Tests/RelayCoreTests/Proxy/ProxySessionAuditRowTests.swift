import Testing
@testable import RelayCore

/// What the audit rows of a session say about targets and statuses: a reviewer reads them
/// without the wire, so they must name the target once and the status actually sent.
@Suite struct ProxySessionAuditRowTests {
    static func settings(_ rules: String) throws -> ProxySession.Settings {
        let config = try ConfigParser.parse(text: "listen 127.0.0.1:0\n" + rules, file: "rows.conf") { _, _ in [] }
        return ProxySession.Settings(registry: config.registry)
    }

    static func entries(_ actions: [ProxySessionAction]) -> [AuditEntry] {
        ProxySessionTests.auditEntries(actions)
    }

    @Test func anIPv6TargetIsBracketedOnceInEveryRow() throws {
        let settings = try Self.settings("server [2001:db8::/32]:443\n")
        // Allowed: the open row and the close row of a connect that fails.
        var session = ProxySession(settings: settings)
        let opened = ProxySessionTests.feed(&session, ProxySessionTests.bytes("CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: [2001:db8::1]:443\r\n\r\n"))
        let open = try #require(Self.entries(opened).first)
        #expect(open.target == "[2001:db8::1]:443")
        #expect(open.resolved == "[2001:db8::1]:443")
        _ = session.handle(.auditCommitted, now: 2)
        let failed = session.handle(.upstreamConnectFailed(.upstreamRefused), now: 3)
        #expect(Self.entries(failed).first?.target == "[2001:db8::1]:443")

        // Refused by the registry, and refused by the normaliser (a zone id).
        for (target, expected) in [("[2001:db9::1]:443", "[2001:db9::1]:443"), ("[fe80::1%25eth0]:443", "[fe80::1%25eth0]:443"),
                                   ("[::1]:19002", "[::1]:19002")] {
            var refused = ProxySession(settings: settings)
            let actions = ProxySessionTests.feed(&refused, ProxySessionTests.bytes("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n"))
            #expect(Self.entries(actions).map(\.target) == [expected])
        }
    }

    /// A request body that breaks its framing mid-stream (a bad chunk, trailers past the
    /// limit) is answered 400 while no response head went out; its close row says so.
    @Test func aBrokenRequestBodyRecordsTheStatusSent() throws {
        let settings = try Self.settings("server 10.9.0.0/16:*\n")
        let bodies = ["5\r\nhello\r\nzz\r\n", "0\r\n" + String(repeating: "X: y\r\n", count: 6000) + "\r\n"]
        for body in bodies {
            let input = ProxySessionTests.bytes(body)
            for split in stride(from: 0, through: min(input.count, 40), by: 1) {
                var session = ProxySession(settings: settings)
                _ = ProxySessionTests.forwarded(&session, "POST http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
                let actions = ProxySessionTests.feed(&session, input, splitAt: [split])
                let sent = ProxySessionTests.refusalBody(actions)
                #expect(sent?.hasPrefix("HTTP/1.1 400 ") == true, "split \(split)")
                let close = try #require(Self.entries(actions).first)
                #expect(close.event == .requestClose)
                #expect(close.reason == .badChunk)
                #expect(close.status == 400, "split \(split)")
                #expect(close.bytesDown == Int64(sent?.utf8.count ?? -1), "the refusal's bytes are what went down")
                #expect(actions.last == .closeClient)
            }
        }
    }

    /// Once the response head is on its way the refusal cannot replace it: the close row
    /// keeps that head's status.
    @Test func aBrokenRequestBodyAfterTheResponseHeadKeepsItsStatus() throws {
        var session = ProxySession(settings: try Self.settings("server 10.9.0.0/16:*\n"))
        _ = ProxySessionTests.forwarded(&session, "POST http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("5\r\nhello\r\n"))
        _ = ProxySessionTests.upstream(&session, "HTTP/1.1 413 Content Too Large\r\nContent-Length: 40\r\n\r\nthe body is too big")
        let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes("zz\r\n"))
        #expect(ProxySessionTests.refusalBody(actions) == nil, "nothing more is sent after a response")
        let close = try #require(Self.entries(actions).first)
        #expect(close.reason == .badChunk)
        #expect(close.status == 413)
        #expect(actions.last == .resetClient, "the response the client was being sent is cut: a reset, not a FIN")
    }
}
