import Testing
@testable import RelayCore

/// Forwarded (absolute-form) requests through `ProxySession`, byte by byte with no sockets:
/// the origin-form rewrite, streamed bodies, keep-alive reuse of the upstream, reloads
/// between requests, de-chunking for HTTP/1.0 clients, and the one retry of a safe request.
@Suite struct ProxySessionForwardingTests {
    typealias Base = ProxySessionTests

    @Test func absoluteFormIsForwardedInOriginForm() throws {
        var session = ProxySession(settings: try Base.settings())
        let sent = Base.forwarded(&session, "GET http://10.9.1.1:8080/a/b?c=d HTTP/1.1\r\nHost: ignored\r\n"
                                  + "Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n"
                                  + "Connection: X-Hop\r\nX-Hop: 1\r\nAccept: */*\r\n\r\n")
        let text = String(decoding: sent, as: UTF8.self)
        #expect(text.hasPrefix("GET /a/b?c=d HTTP/1.1\r\n"))
        #expect(text.contains("Host: 10.9.1.1:8080\r\n"))
        #expect(text.contains("Via: 1.1 dynrelay\r\n"))
        #expect(text.contains("Accept: */*\r\n"))
        #expect(!text.lowercased().contains("proxy-authorization"))
        #expect(!text.lowercased().contains("proxy-connection"))
        #expect(!text.lowercased().contains("x-hop"))
        #expect(text.hasSuffix("\r\n\r\n"))
    }

    @Test func keepAliveReusesTheUpstreamAndAuditsEachRequest() throws {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.forwarded(&session, "GET http://10.9.1.1/one HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n")
        let response = Base.upstream(&session, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        var toClient: [UInt8] = []
        for case .sendToClient(let part) in response { toClient += part }
        let text = String(decoding: toClient, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.contains("Via: 1.1 dynrelay\r\n"))
        #expect(text.hasSuffix("\r\n\r\nhello"))
        let close = try #require(Base.auditEntries(response).first)
        #expect(close.event == .requestClose)
        #expect(close.status == 200)
        #expect(close.reason == .completed)
        #expect(!response.contains(.closeClient))
        #expect(session.wantsClientBytes)

        // Same host and port: no resolve, no connect, straight to the open record.
        let second = Base.feed(&session, Base.bytes("GET http://10.9.1.1/two HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n"))
        #expect(second.count == 1)
        #expect(Base.auditEntries(second).first?.event == .requestOpen)
    }

    @Test func requestBodyStreamsAtEverySplitAndPipelinedRequestWaits() throws {
        let request = Base.bytes("POST http://10.9.1.1/up HTTP/1.1\r\nHost: 10.9.1.1\r\nContent-Length: 10\r\n\r\n0123456789")
        let next = Base.bytes("GET http://10.9.1.1/next HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n")
        let input = request + next
        for split in 0...input.count {
            var session = ProxySession(settings: try Base.settings())
            // The driver may deliver bytes in any slicing, even while the session is waiting.
            var actions = Base.feed(&session, input, splitAt: [split])
            actions += session.handle(.upstreamConnected, now: 2)
            actions += session.handle(.auditCommitted, now: 3)
            var up: [UInt8] = []
            for case .sendToUpstream(let part) in actions { up += part }
            let text = String(decoding: up, as: UTF8.self)
            #expect(text.hasPrefix("POST /up HTTP/1.1\r\n"), "split \(split)")
            #expect(text.hasSuffix("\r\n\r\n0123456789"), "split \(split): \(text)")
            #expect(!text.contains("next"), "split \(split)")
            #expect(!session.wantsClientBytes, "the pipelined request waits for the response")
        }
    }

    @Test func badChunkInRequestBodyIs400AndAudited() throws {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.forwarded(&session, "POST http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        let actions = Base.feed(&session, Base.bytes("zz\r\nabc\r\n"))
        #expect(Base.refusalBody(actions)?.hasPrefix("HTTP/1.1 400") == true)
        #expect(Base.auditEntries(actions).first?.reason == .badChunk)
        #expect(actions.contains(.resetUpstream))
        #expect(actions.last == .closeClient)
    }

    @Test func responseFramedByCloseEndsAtUpstreamEOF() throws {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.forwarded(&session, "GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n")
        let head = Base.upstream(&session, "HTTP/1.1 200 OK\r\n\r\npartial")
        var toClient: [UInt8] = []
        for case .sendToClient(let part) in head { toClient += part }
        #expect(String(decoding: toClient, as: UTF8.self).contains("Connection: close\r\n"))
        let end = session.handle(.upstreamEOF, now: 9)
        #expect(Base.auditEntries(end).first?.reason == .completed)
        #expect(end.last == .closeClient)
    }

    @Test func upstreamClosingBeforeAResponseIs502() throws {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.forwarded(&session, "GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n")
        let actions = session.handle(.upstreamEOF, now: 9)
        #expect(Base.refusalBody(actions)?.hasPrefix("HTTP/1.1 502") == true)
        #expect(Base.auditEntries(actions).first?.reason == .upstreamClosed)
    }

    @Test func truncatedResponseBodyClosesWithoutPretending() throws {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.forwarded(&session, "GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n")
        _ = Base.upstream(&session, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
        let actions = session.handle(.upstreamFailed, now: 9)
        #expect(Base.refusalBody(actions) == nil, "a response already started cannot be replaced by a 502")
        let entry = try #require(Base.auditEntries(actions).first)
        #expect(entry.reason == .upstreamReset)
        #expect(entry.status == 200)
        #expect(actions.last == .resetClient, "a cut response must not end in order")
    }

    @Test func interimResponsesAreForwardedBeforeTheFinalOne() throws {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.forwarded(&session, "POST http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        let interim = Base.upstream(&session, "HTTP/1.1 100 Continue\r\n\r\n")
        #expect(Base.refusalBody(interim)?.hasPrefix("HTTP/1.1 100 Continue\r\n") == true)
        _ = Base.feed(&session, Base.bytes("ok"))
        let final = Base.upstream(&session, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        #expect(Base.refusalBody(final)?.hasPrefix("HTTP/1.1 201 Created\r\n") == true)
        #expect(Base.auditEntries(final).first?.status == 201)
    }

    @Test func switchingProtocolsIsRefused() throws {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.forwarded(&session, "GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        let actions = Base.upstream(&session, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
        #expect(Base.auditEntries(actions).first?.reason == .badUpstreamResponse)
        #expect(actions.last == .closeClient)
    }

    @Test func aReloadedRegistryDecidesTheNextRequestOnAKeptAliveConnection() throws {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.forwarded(&session, "GET http://10.9.1.1/one HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n")
        _ = Base.upstream(&session, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        let reloaded = try ConfigParser.parse(text: "listen 127.0.0.1:0\nserver 10.1.2.3:443\n", file: "new.conf") { _, _ in [] }
        session.useRegistry(reloaded.registry)
        let actions = Base.feed(&session, Base.bytes("GET http://10.9.1.1/two HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n"))
        #expect(Base.auditEntries(actions).first?.reason == .notRegistered)
        #expect(Base.refusalBody(actions)?.hasPrefix("HTTP/1.1 403") == true)
    }

    /// A name's address is checked when it is resolved; a kept-alive link to it must be
    /// checked again after a reload, or a new `deny` of that address would not apply to
    /// the requests of connections that stay busy.
    @Test func aReusedLinkIsCheckedAgainstTheReloadedRules() throws {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.feed(&session, Base.bytes("GET http://app.corp.example/one HTTP/1.1\r\nHost: app.corp.example\r\n\r\n"))
        _ = session.handle(.resolved([.v4(IPv4Address(10, 20, 0, 5))]), now: 2)
        _ = session.handle(.upstreamConnected, now: 2)
        _ = session.handle(.auditCommitted, now: 3)
        _ = Base.upstream(&session, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        let same = try ConfigParser.parse(text: "listen 127.0.0.1:0\nserver app.corp.example:80\n", file: "same.conf") { _, _ in [] }
        session.useRegistry(same.registry)
        let reused = Base.feed(&session, Base.bytes("GET http://app.corp.example/two HTTP/1.1\r\nHost: app.corp.example\r\n\r\n"))
        #expect(Base.auditEntries(reused).map(\.event) == [.requestOpen], "rules that still allow the address reuse the link")
        _ = session.handle(.auditCommitted, now: 4)
        _ = Base.upstream(&session, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

        let denying = try ConfigParser.parse(text: "listen 127.0.0.1:0\nserver app.corp.example:80\ndeny 10.20.0.5\n",
                                             file: "new.conf") { _, _ in [] }
        session.useRegistry(denying.registry)
        let third = Base.feed(&session, Base.bytes("GET http://app.corp.example/three HTTP/1.1\r\nHost: app.corp.example\r\n\r\n"))
        #expect(third.contains(.closeUpstream), "the link to a now-denied address is dropped")
        #expect(third.contains { if case .resolve = $0 { return true } else { return false } })
        let refused = session.handle(.resolved([.v4(IPv4Address(10, 20, 0, 5))]), now: 5)
        #expect(Base.auditEntries(refused).first?.reason == .denied)
    }

    @Test func anHTTP10ClientGetsAChunkedAnswerDechunkedAtEverySplit() throws {
        let response = Base.bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  + "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n")
        for split in 0...response.count {
            var session = ProxySession(settings: try Base.settings())
            _ = Base.forwarded(&session, "GET http://10.9.1.1/x HTTP/1.0\r\n\r\n")
            var actions: [ProxySessionAction] = []
            for part in [response[..<split], response[split...]] where !part.isEmpty {
                actions += part.withUnsafeBytes { session.upstreamBytes($0, now: 5) }
            }
            var toClient: [UInt8] = []
            for case .sendToClient(let bytes) in actions { toClient += bytes }
            let text = String(decoding: toClient, as: UTF8.self)
            #expect(!text.lowercased().contains("transfer-encoding"), "split \(split): \(text)")
            #expect(text.contains("Connection: close\r\n"), "split \(split)")
            #expect(text.hasSuffix("\r\n\r\nhello world"), "split \(split): \(text)")
            #expect(Base.auditEntries(actions).first?.reason == .completed, "split \(split)")
            #expect(actions.last == .closeClient, "the body ends with the connection")
        }
    }

    @Test func anHTTP11ClientGetsChunkedVerbatim() throws {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.forwarded(&session, "GET http://10.9.1.1/x HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n")
        let actions = Base.upstream(&session, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        var toClient: [UInt8] = []
        for case .sendToClient(let bytes) in actions { toClient += bytes }
        #expect(String(decoding: toClient, as: UTF8.self).hasSuffix("\r\n\r\n5\r\nhello\r\n0\r\n\r\n"))
        #expect(actions.last != .closeClient, "keep-alive stays")
    }

    /// Runs one request to completion, then sends `second` on the kept-alive link up to the
    /// point where its head went upstream.
    static func secondRequestOnAReusedLink(_ second: String) throws -> ProxySession {
        var session = ProxySession(settings: try Base.settings())
        _ = Base.forwarded(&session, "GET http://10.9.1.1/one HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n")
        _ = Base.upstream(&session, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        let open = Base.feed(&session, Base.bytes(second))
        #expect(Base.auditEntries(open).map(\.event) == [.requestOpen])
        #expect(!open.contains { if case .connect = $0 { return true } else { return false } }, "the link is reused")
        let sent = session.handle(.auditCommitted, now: 4)
        #expect(sent.contains { if case .sendToUpstream = $0 { return true } else { return false } })
        return session
    }

    @Test func aSafeRequestIsRetriedOnceWhenAReusedUpstreamClosesFirst() throws {
        var session = try Self.secondRequestOnAReusedLink("GET http://10.9.1.1/two HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n")
        let retry = session.handle(.upstreamEOF, now: 5)
        #expect(retry.contains(.closeUpstream))
        #expect(retry.contains(.connect(.v4(IPv4Address(strict: "10.9.1.1")!), port: 80)))
        #expect(Base.auditEntries(retry).isEmpty, "no new open row and no failure row: the request goes again")
        #expect(Base.refusalBody(retry) == nil, "the client sees nothing of the retry")

        let resent = session.handle(.upstreamConnected, now: 6)
        var head: [UInt8] = []
        for case .sendToUpstream(let part) in resent { head += part }
        #expect(String(decoding: head, as: UTF8.self).hasPrefix("GET /two HTTP/1.1\r\n"), "the open row was committed already")

        let done = Base.upstream(&session, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        let close = try #require(Base.auditEntries(done).first)
        #expect(close.event == .requestClose)
        #expect(close.status == 200)
    }

    @Test func aRetriedRequestThatFailsAgainGets502() throws {
        var session = try Self.secondRequestOnAReusedLink("GET http://10.9.1.1/two HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n")
        _ = session.handle(.upstreamEOF, now: 5)
        _ = session.handle(.upstreamConnected, now: 6)
        let failed = session.handle(.upstreamEOF, now: 7)
        #expect(Base.refusalBody(failed)?.hasPrefix("HTTP/1.1 502") == true)
        #expect(Base.auditEntries(failed).first?.event == .requestClose)
        #expect(failed.last == .closeClient)
    }

    @Test func anUnsafeOrBodiedRequestIsNeverRetried() throws {
        for second in ["POST http://10.9.1.1/two HTTP/1.1\r\nHost: 10.9.1.1\r\nContent-Length: 0\r\n\r\n",
                       "GET http://10.9.1.1/two HTTP/1.1\r\nHost: 10.9.1.1\r\nContent-Length: 2\r\n\r\nhi"] {
            var session = try Self.secondRequestOnAReusedLink(second)
            let failed = session.handle(.upstreamEOF, now: 5)
            #expect(Base.refusalBody(failed)?.hasPrefix("HTTP/1.1 502") == true, "\(second)")
            #expect(!failed.contains { if case .connect = $0 { return true } else { return false } }, "\(second)")
        }
    }
}
