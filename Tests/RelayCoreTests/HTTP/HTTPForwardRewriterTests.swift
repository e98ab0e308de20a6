import Testing
@testable import RelayCore

@Suite("HTTP forward rewriter and proxy responses")
struct HTTPForwardRewriterTests {
    private func text(_ out: [UInt8]) -> String { String(decoding: out, as: UTF8.self) }

    @Test func upstreamRequestGolden() {
        let head = HTTPRequestHead(method: "POST", target: "http://app.corp:8080/x?y=1", version: .http1_1, headers: HTTPHeaders([
            ("Host", "app.corp:8080"),
            ("User-Agent", "curl/8"),
            ("Proxy-Authorization", "Basic dTpw"),
            ("Proxy-Connection", "keep-alive"),
            ("Connection", "keep-alive, X-Secret"),
            ("X-Secret", "s"),
            ("Keep-Alive", "timeout=5"),
            ("TE", "trailers"),
            ("Trailer", "X-Sum"),
            ("Upgrade", "websocket"),
            ("Transfer-Encoding", "chunked"),
            ("Accept", "*/*"),
        ]))
        let out = ForwardRewriter.upstreamRequest(head, hostHeader: "app.corp:8080", pathAndQuery: "/x?y=1", viaName: "dynrelay")
        #expect(text(out) == "POST /x?y=1 HTTP/1.1\r\nHost: app.corp:8080\r\nUser-Agent: curl/8\r\nTransfer-Encoding: chunked\r\nAccept: */*\r\nVia: 1.1 dynrelay\r\n\r\n")
    }

    @Test func upstreamRequestExtendsViaAndSpeaksHTTP11() {
        let head = HTTPRequestHead(method: "GET", target: "http://a/", version: .http1_0, headers: HTTPHeaders([
            ("Via", "1.0 first"), ("Content-Length", "3"), ("via", "1.1 second"), ("Accept", "a"),
        ]))
        let out = ForwardRewriter.upstreamRequest(head, hostHeader: "a", pathAndQuery: "/", viaName: "relay.example")
        #expect(text(out) == "GET / HTTP/1.1\r\nHost: a\r\nVia: 1.0 first\r\nContent-Length: 3\r\nvia: 1.1 second, 1.1 relay.example\r\nAccept: a\r\n\r\n")
    }

    @Test func connectionCannotStripFramingFields() {
        let head = HTTPRequestHead(method: "POST", target: "/", headers: HTTPHeaders([
            ("Connection", "Content-Length, transfer-encoding, host"), ("Content-Length", "3"),
        ]))
        let out = ForwardRewriter.upstreamRequest(head, hostHeader: "h:81", pathAndQuery: "/", viaName: "dynrelay")
        #expect(text(out) == "POST / HTTP/1.1\r\nHost: h:81\r\nContent-Length: 3\r\nVia: 1.1 dynrelay\r\n\r\n")
    }

    @Test func upstreamRequestParsesBack() {
        let head = HTTPRequestHead(method: "GET", target: "http://a/", headers: HTTPHeaders([("X-A", "1"), ("Connection", "close")]))
        let out = ForwardRewriter.upstreamRequest(head, hostHeader: "a", pathAndQuery: "/", viaName: "dynrelay")
        let reparsed = Feed.headAllWays(HTTPRequestHeadParser.self, out)
        #expect(reparsed.head == HTTPRequestHead(method: "GET", target: "/", headers: HTTPHeaders([("Host", "a"), ("X-A", "1"), ("Via", "1.1 dynrelay")])))
    }

    @Test func clientResponseGolden() {
        let head = HTTPResponseHead(version: .http1_0, status: 200, reason: "OK", headers: HTTPHeaders([
            ("Content-Length", "2"), ("Connection", "keep-alive"), ("Keep-Alive", "timeout=5"),
            ("Proxy-Authenticate", "Basic"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"),
        ]))
        #expect(text(ForwardRewriter.clientResponse(head, viaName: "dynrelay", closeAfter: false))
            == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nVia: 1.1 dynrelay\r\n\r\n")
        let empty = HTTPResponseHead(status: 204, reason: "", headers: HTTPHeaders([("Via", "1.1 up")]))
        #expect(text(ForwardRewriter.clientResponse(empty, viaName: "dynrelay", closeAfter: true))
            == "HTTP/1.1 204 \r\nVia: 1.1 up, 1.1 dynrelay\r\nConnection: close\r\n\r\n")
    }

    @Test func wantsClose() {
        #expect(!ForwardRewriter.wantsClose(version: .http1_1, headers: HTTPHeaders()))
        #expect(ForwardRewriter.wantsClose(version: .http1_1, headers: HTTPHeaders([("Connection", "Upgrade, CLOSE")])))
        #expect(ForwardRewriter.wantsClose(version: .http1_0, headers: HTTPHeaders()))
        #expect(!ForwardRewriter.wantsClose(version: .http1_0, headers: HTTPHeaders([("connection", "Keep-Alive")])))
        #expect(ForwardRewriter.wantsClose(version: .http1_0, headers: HTTPHeaders([("Connection", "keep-alive, close")])))
    }

    @Test func hostHeaderValue() {
        #expect(ForwardRewriter.hostHeaderValue(scheme: "http", host: RawHost(text: "a"), port: 80) == "a")
        #expect(ForwardRewriter.hostHeaderValue(scheme: "http", host: RawHost(text: "a"), port: 443) == "a:443")
        #expect(ForwardRewriter.hostHeaderValue(scheme: "https", host: RawHost(text: "a"), port: 443) == "a")
        #expect(ForwardRewriter.hostHeaderValue(scheme: "http", host: RawHost(text: "::1", bracketed: true), port: 8081) == "[::1]:8081")
    }

    @Test func connectEstablishedGolden() {
        #expect(text(ProxyResponses.connectEstablished()) == "HTTP/1.1 200 Connection established\r\n\r\n")
    }

    @Test func refusalGolden() {
        #expect(text(ProxyResponses.refusal(.notRegistered))
            == "HTTP/1.1 403 Forbidden\r\nProxy-Status: dynrelay; error=http_request_denied; details=\"not-registered\"\r\n"
            + "Content-Type: text/plain\r\nContent-Length: 15\r\nConnection: close\r\n\r\nnot-registered\n")
        #expect(text(ProxyResponses.refusal(.ambiguousFraming))
            == "HTTP/1.1 400 Bad Request\r\nProxy-Status: dynrelay; error=http_request_error; details=\"ambiguous-framing\"\r\n"
            + "Content-Type: text/plain\r\nContent-Length: 18\r\nConnection: close\r\n\r\nambiguous-framing\n")
        #expect(text(ProxyResponses.refusal(.denied, status: 407))
            == "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Type: text/plain\r\nContent-Length: 7\r\nConnection: close\r\n\r\ndenied\n")
        #expect(text(ProxyResponses.refusal(.completed))
            == "HTTP/1.1 400 Bad Request\r\nProxy-Status: dynrelay; error=http_request_error; details=\"completed\"\r\n"
            + "Content-Type: text/plain\r\nContent-Length: 10\r\nConnection: close\r\n\r\ncompleted\n")
    }

    @Test func everyRefusalParsesAsAResponse() {
        for reason in ReasonCode.allCases {
            let out = ProxyResponses.refusal(reason)
            let parsed = Feed.headAllWays(HTTPResponseHeadParser.self, out, everySplit: false)
            #expect(parsed.head?.status == reason.refusalStatus ?? 400)
            #expect(parsed.head.map { MessageFraming.response($0, requestMethod: "GET") } == .success(.contentLength(UInt64(reason.rawValue.utf8.count + 1))))
        }
    }
}
