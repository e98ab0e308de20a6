import Testing
@testable import RelayCore

@Suite("Client request head")
struct ClientRequestHeadTests {
    static func text(_ bytes: [UInt8]?) -> String? { bytes.map { String(decoding: $0, as: UTF8.self) } }

    @Test("origin-form and absolute-form, Host from the URL, framing the client's own")
    func forms() throws {
        let url = try ClientURL(parsing: "http://App.Example:8080/a?b=1")
        var headers = HTTPHeaders([("Accept", "*/*"), ("Host", "evil"), ("Content-Length", "99"),
                                   ("transfer-encoding", "chunked"), ("Connection", "close"), ("Proxy-Authorization", "x")])
        headers.append(name: "X-Empty", value: "")
        let origin = ClientRequestHead.encode(method: "POST", url: url, form: .origin, headers: headers,
                                              extra: [("Cookie", "a=1")], framing: .contentLength(5))
        #expect(Self.text(origin) == "POST /a?b=1 HTTP/1.1\r\nHost: app.example:8080\r\nAccept: */*\r\nX-Empty: \r\n"
            + "Cookie: a=1\r\nContent-Length: 5\r\n\r\n")
        let absolute = ClientRequestHead.encode(method: "GET", url: url, form: .absolute, headers: HTTPHeaders(),
                                                extra: [("Proxy-Authorization", "Basic eA==")], framing: .chunked)
        #expect(Self.text(absolute) == "GET http://app.example:8080/a?b=1 HTTP/1.1\r\nHost: app.example:8080\r\n"
            + "Proxy-Authorization: Basic eA==\r\nTransfer-Encoding: chunked\r\n\r\n")
    }

    @Test("what it writes parses back as one request with the same framing")
    func parsesBack() throws {
        let url = try ClientURL(parsing: "https://[2001:db8::1]/x")
        let head = try #require(ClientRequestHead.encode(method: "PUT", url: url, form: .origin,
                                                         headers: HTTPHeaders([("A", "b")]), framing: .chunked))
        var parser = HTTPRequestHeadParser()
        guard case .complete(let parsed, let length) = head.withUnsafeBytes({ parser.parse($0) }) else {
            Issue.record("did not parse")
            return
        }
        #expect(length == head.count)
        #expect(parsed.headers.first("host") == "[2001:db8::1]")
        #expect(MessageFraming.request(parsed) == .success(.chunked))
    }

    @Test("a method, name or value that could split the head is refused", arguments: [
        ("GE T", "A", "b"), ("GET", "A B", "b"), ("GET", "A", "b\r\nX: y"), ("GET", "", "b"), ("GET", "A", "b\nc"),
        ("", "A", "b"), ("GET", "A:", "b"), ("GET", "A", "\u{7F}"),
    ])
    func refuses(method: String, name: String, value: String) throws {
        let url = try ClientURL(parsing: "http://a/")
        #expect(ClientRequestHead.encode(method: method, url: url, form: .origin, headers: HTTPHeaders([(name, value)]),
                                         framing: .none) == nil)
    }

    @Test("chunks: hex size, data, CRLF; an empty chunk frames to nothing")
    func chunks() {
        #expect(Self.text(ClientRequestHead.chunk(Array("hello".utf8))) == "5\r\nhello\r\n")
        #expect(Self.text(ClientRequestHead.chunk([UInt8](repeating: 0x61, count: 26)))?.hasPrefix("1a\r\n") == true)
        #expect(ClientRequestHead.chunk([]).isEmpty)
        var framer = BodyFramer(.chunked)
        let body = ClientRequestHead.chunk(Array("ab".utf8)) + ClientRequestHead.chunk(Array("cde".utf8)) + ClientRequestHead.lastChunk
        let progress = body.withUnsafeBytes { framer.consume($0) }
        #expect(progress == .done(body.count))
    }
}
