import Testing
@testable import RelayCore

@Suite("HTTP response head parser")
struct HTTPResponseHeadParserTests {
    @Test func parsesStatusLineAndHeaders() {
        let text = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\nhi"
        let expected = HTTPResponseHead(version: .http1_1, status: 200, reason: "OK",
                                        headers: HTTPHeaders([("Content-Length", "2"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")]))
        #expect(Feed.response(text) == .complete(expected, headLength: text.utf8.count - 2))
    }

    @Test func acceptsMissingOrEmptyReasonPhrase() {
        // Explicit: a status line ending right after the code is accepted with an empty reason,
        // and so is one with the SP but no phrase.
        #expect(Feed.response("HTTP/1.1 200\r\n\r\n") == .complete(HTTPResponseHead(status: 200, reason: ""), headLength: 16))
        #expect(Feed.response("HTTP/1.1 204 \r\n\r\n") == .complete(HTTPResponseHead(status: 204, reason: ""), headLength: 17))
    }

    @Test func keepsReasonPhraseWithSpacesAndVersion10() {
        let head = Feed.response("HTTP/1.0 404 Not  Found here\r\n\r\n").head
        #expect(head?.reason == "Not  Found here")
        #expect(head?.version == .http1_0)
    }

    @Test(arguments: [
        ("HTTP/1.1 20 OK\r\n\r\n", ReasonCode.badUpstreamResponse),
        ("HTTP/1.1 2000 OK\r\n\r\n", .badUpstreamResponse),
        ("HTTP/1.1  200 OK\r\n\r\n", .badUpstreamResponse),
        ("HTTP/1.1 2x0 OK\r\n\r\n", .badUpstreamResponse),
        ("HTTP/1.1 099 Low\r\n\r\n", .badUpstreamResponse),
        ("HTTP/1.1 600 High\r\n\r\n", .badUpstreamResponse),
        ("HTTP/1.1 200 O\u{1}K\r\n\r\n", .badUpstreamResponse),
        ("HTTP/2 200 OK\r\n\r\n", .badUpstreamResponse),
        ("http/1.1 200 OK\r\n\r\n", .badUpstreamResponse),
        ("\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", .badUpstreamResponse),
        ("HTTP/2.0 200 OK\r\n\r\n", .unsupportedVersion),
        ("HTTP/1.1 200 OK\nX: a\r\n\r\n", .bareLineEnding),
        ("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", .obsFold),
        ("HTTP/1.1 200 OK\r\nX : a\r\n\r\n", .badHeader),
        ("HTTP/1.1 200 OK\r\nX: \u{0}\r\n\r\n", .badHeader),
    ])
    func refusesHostileHead(text: String, expected: ReasonCode) {
        #expect(Feed.response(text) == .invalid(expected))
    }

    @Test func enforcesLimits() {
        let limits = HTTPHeadLimits(maxHeadBytes: 40, maxHeaders: 1)
        #expect(Feed.response("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n\r\n", limits: limits) == .invalid(.tooManyHeaders))
        #expect(Feed.response("HTTP/1.1 200 OK\r\nA: " + String(repeating: "x", count: 40) + "\r\n\r\n", limits: limits) == .invalid(.headTooLarge))
    }
}
