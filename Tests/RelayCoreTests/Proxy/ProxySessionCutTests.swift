import Testing
@testable import RelayCore

/// A message the relay cannot finish ends in a reset on the side it was going to: a FIN
/// after part of a body would let the peer take the part for the whole.
@Suite struct ProxySessionCutTests {
    typealias Base = ProxySessionTests

    /// A session whose request went out and whose upstream answered `response`.
    static func answered(_ request: String, _ response: String) throws -> ProxySession {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.forwarded(&session, request)
        _ = Base.upstream(&session, response)
        return session
    }

    static let get = "GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n"

    @Test(arguments: [
        // (response so far, what the upstream does next, the reason recorded)
        ("HTTP/1.1 200 OK\r\n\r\npartial", ProxySessionEvent.upstreamFailed, ReasonCode.upstreamReset),
        ("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", .upstreamEOF, .upstreamClosed),
        ("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", .upstreamFailed, .upstreamReset),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n", .upstreamEOF, .upstreamClosed),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", .upstreamFailed, .upstreamReset),
    ])
    func anAbortedResponseBodyResetsTheClient(response: String, next: ProxySessionEvent, reason: ReasonCode) throws {
        var session = try Self.answered(Self.get, response)
        let actions = session.handle(next, now: 9)
        let entry = try #require(Base.auditEntries(actions).first)
        #expect(entry.event == .requestClose)
        #expect(entry.reason == reason)
        #expect(entry.status == 200)
        #expect(actions.last == .resetClient, "\(actions)")
        #expect(!actions.contains(.closeClient))
        #expect(session.isFinished)
    }

    @Test func aBodyDelimitedByCloseIsCompleteOnlyAtAnOrderlyClose() throws {
        var clean = try Self.answered(Self.get, "HTTP/1.1 200 OK\r\n\r\nall of it")
        #expect(clean.handle(.upstreamEOF, now: 9).last == .closeClient)
        var cut = try Self.answered(Self.get, "HTTP/1.1 200 OK\r\n\r\npart of it")
        #expect(cut.handle(.upstreamFailed, now: 9).last == .resetClient)
    }

    @Test func aDechunkedAnswerToAnHTTP10ClientIsResetWhenCut() throws {
        var session = try Self.answered("GET http://10.9.1.1/ HTTP/1.0\r\n\r\n",
                                        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n")
        // The 1.0 client reads a body delimited by close: only a reset tells it this one is cut.
        #expect(session.handle(.upstreamEOF, now: 9).last == .resetClient)
    }

    @Test func aBadChunkFromTheUpstreamAfterTheHeadResetsTheClient() throws {
        var session = try Self.answered(Self.get, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n")
        let actions = Base.upstream(&session, "zz\r\n")
        #expect(Base.auditEntries(actions).first?.reason == .badUpstreamResponse)
        #expect(actions.last == .resetClient)
    }

    @Test(arguments: [ReasonCode.shutdown, .idleTimeout])
    func theRelayCuttingAResponseResetsTheClient(reason: ReasonCode) throws {
        var session = try Self.answered(Self.get, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
        let actions = session.handle(.connectionLost(reason), now: 9)
        #expect(Base.auditEntries(actions).first?.reason == reason)
        #expect(actions.last == .resetClient)
        #expect(actions.contains(.closeUpstream), "the request was complete: the upstream is closed in order")
    }

    @Test func aRequestBodyCutByTheClientResetsTheUpstream() throws {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.forwarded(&session, "POST http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nContent-Length: 10\r\n\r\n01234")
        let lost = session.handle(.clientEOF, now: 9)
        #expect(Base.auditEntries(lost).first?.reason == .clientClosed)
        #expect(lost.contains(.resetUpstream), "\(lost)")
        #expect(lost.last == .closeClient, "no response was started: nothing of one is cut")
    }

    @Test func aBadChunkFromTheClientIsRefusedInOrderAndResetsTheUpstream() throws {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.forwarded(&session, "POST http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        let actions = Base.feed(&session, Base.bytes("zz\r\nabc\r\n"))
        #expect(Base.refusalBody(actions)?.hasPrefix("HTTP/1.1 400") == true)
        #expect(actions.contains(.resetUpstream))
        #expect(actions.last == .closeClient, "the 400 is a complete answer")
    }

    @Test func aCompleteResponseEndsInOrder() throws {
        var session = try Self.answered("GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nConnection: close\r\n\r\n",
                                        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
        let actions = Base.upstream(&session, "ok")
        #expect(actions.last == .closeClient)
        #expect(!actions.contains(.resetUpstream))
    }
}
