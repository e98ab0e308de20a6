import Testing
@testable import RelayCore

@Suite("HTTP request head parser")
struct HTTPRequestHeadParserTests {
    @Test func parsesAbsoluteFormGetWithHeaders() {
        let text = "GET http://app.corp:8080/x?y=1 HTTP/1.1\r\nHost: app.corp:8080\r\nAccept: */*\r\nX-Empty:\r\nX-Ows: \t a \t b \t\r\n\r\n"
        let result = Feed.request(text)
        let expected = HTTPRequestHead(method: "GET", target: "http://app.corp:8080/x?y=1", version: .http1_1,
                                       headers: HTTPHeaders([("Host", "app.corp:8080"), ("Accept", "*/*"), ("X-Empty", ""), ("X-Ows", "a \t b")]))
        #expect(result == .complete(expected, headLength: text.utf8.count))
    }

    @Test func parsesConnect() {
        let text = "CONNECT app1.corp.example:443 HTTP/1.1\r\nHost: app1.corp.example:443\r\n\r\n"
        #expect(Feed.request(text).head?.method == "CONNECT")
        #expect(Feed.request(text).head?.target == "app1.corp.example:443")
    }

    @Test func headLengthStopsBeforeBodyAndPipelinedRequest() {
        let head = "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n"
        let text = head + "hello" + "GET /next HTTP/1.1\r\nHost: a\r\n\r\n"
        #expect(Feed.request(text).headLength == head.utf8.count)
    }

    @Test func acceptsHTTP10AndNoHeaders() {
        let result = Feed.request("GET / HTTP/1.0\r\n\r\n")
        #expect(result == .complete(HTTPRequestHead(method: "GET", target: "/", version: .http1_0), headLength: 18))
    }

    @Test func toleratesExactlyOneLeadingCRLF() {
        let text = "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"
        #expect(Feed.request(text).headLength == text.utf8.count)
        #expect(Feed.request("\r\n" + text).reason == .badRequestLine)
        #expect(Feed.request("\r\n\r\n").reason == .badRequestLine)
    }

    /// obs-text (RFC 9110 5.5): UTF-8 is read as text; other bytes 0x80-0xFF are kept one
    /// for one and go back on the wire unchanged. Control bytes stay refused.
    @Test func keepsUTF8ValuesAsTextAndOtherObsTextByteForByte() {
        #expect(Feed.request("GET / HTTP/1.1\r\nX-Name: Zoë\r\n\r\n").head?.headers.fields.first?.valueEncoding == .utf8)
        #expect(Feed.request("GET / HTTP/1.1\r\nX-Name: Zoë\r\n\r\n").head?.headers.first("x-name") == "Zoë")
        let latin = bytes("caf") + [0xE9, 0x20, 0x80, 0xFF, 0xC3]
        let head = Feed.headAllWays(HTTPRequestHeadParser.self, bytes("GET / HTTP/1.1\r\nX: ") + latin + bytes(" \r\n\r\n")).head
        let field = head?.headers.fields.first
        #expect(field?.valueEncoding == .isoLatin1)
        #expect(field?.value.unicodeScalars.map(\.value) == latin.map(UInt32.init))
        var wire: [UInt8] = []
        field?.appendValue(to: &wire)
        #expect(wire == latin)
        for control: UInt8 in [0x00, 0x01, 0x1F, 0x7F] {
            #expect(Feed.headAllWays(HTTPRequestHeadParser.self, bytes("GET / HTTP/1.1\r\nX: a") + [0xFF, control] + bytes("\r\n\r\n")).reason
                    == .badHeader, "\(control)")
        }
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\nHost: a\r\n\r\n", ReasonCode.bareLineEnding),
        ("GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", .bareLineEnding),
        ("GET / HTTP/1.1\r\nHost: a\n\n", .bareLineEnding),
        ("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", .bareLineEnding),
        ("GET / HTTP/1.1\r\nX: a\r\n\r\r", .bareLineEnding),
        ("GET / HTTP/1.1\r\r\n\r\n", .bareLineEnding),
        ("\nGET / HTTP/1.1\r\n\r\n", .bareLineEnding),
        ("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", .obsFold),
        ("GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n", .obsFold),
        ("GET / HTTP/1.1\r\n X: a\r\n\r\n", .obsFold),
        ("GET / HTTP/1.1\r\nX : a\r\n\r\n", .badHeader),
        ("GET / HTTP/1.1\r\nX\t: a\r\n\r\n", .badHeader),
        ("GET / HTTP/1.1\r\n: a\r\n\r\n", .badHeader),
        ("GET / HTTP/1.1\r\nNoColon\r\n\r\n", .badHeader),
        ("GET / HTTP/1.1\r\nX(y): a\r\n\r\n", .badHeader),
        ("GET / HTTP/1.1\r\nX: a\u{0}b\r\n\r\n", .badHeader),
        ("GET / HTTP/1.1\r\nX: a\u{1}b\r\n\r\n", .badHeader),
        ("GET / HTTP/1.1\r\nX: a\u{7F}\r\n\r\n", .badHeader),
        ("GET / HTTP/1.1\r\nX: \u{1B}[31m\r\n\r\n", .badHeader),
        ("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", .badHeader),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", .badHeader),
        ("GET  / HTTP/1.1\r\n\r\n", .badRequestLine),
        ("GET /  HTTP/1.1\r\n\r\n", .badRequestLine),
        ("GET / HTTP/1.1 \r\n\r\n", .badRequestLine),
        (" GET / HTTP/1.1\r\n\r\n", .badRequestLine),
        ("GET\t/ HTTP/1.1\r\n\r\n", .badRequestLine),
        ("GET /\tx HTTP/1.1\r\n\r\n", .badRequestLine),
        ("GET /a\u{1}b HTTP/1.1\r\n\r\n", .badRequestLine),
        ("GET /é HTTP/1.1\r\n\r\n", .badRequestLine),
        ("GE(T / HTTP/1.1\r\n\r\n", .badRequestLine),
        ("GET / http/1.1\r\n\r\n", .badRequestLine),
        ("GET / HTTP/1.10\r\n\r\n", .badRequestLine),
        ("GET / HTTP/1\r\n\r\n", .badRequestLine),
        ("GET / HTTP/1.1x\r\n\r\n", .badRequestLine),
        ("GET /\r\n\r\n", .badRequestLine),
        ("GET\r\n\r\n", .badRequestLine),
        ("GET / HTTP/2.0\r\n\r\n", .unsupportedVersion),
        ("GET / HTTP/1.2\r\n\r\n", .unsupportedVersion),
        ("GET / HTTP/0.9\r\n\r\n", .unsupportedVersion),
    ])
    func refusesHostileHead(text: String, expected: ReasonCode) {
        #expect(Feed.request(text) == .invalid(expected))
    }

    @Test func findsBareLineEndingsAtEveryWordAlignment() {
        // The scanner skips eight bytes at a time; a stray byte must be caught in any lane.
        for position in 0..<24 {
            for stray in ["\n", "\r"] {
                var value = Array(repeating: "v", count: 24)
                value[position] = stray
                let text = "GET / HTTP/1.1\r\nX-Long: " + value.joined() + "\r\n\r\n"
                #expect(Feed.request(text) == .invalid(.bareLineEnding), "stray \(stray.debugDescription) at \(position)")
            }
        }
    }

    @Test func nonASCIIBytesLookingLikeLineEndsAreNotLineEnds() {
        // "Ê" is C3 8A and "Í" is C3 8D: the high-bit twins of LF and CR.
        let value = String(repeating: "ÊÍ", count: 9)
        #expect(Feed.request("GET / HTTP/1.1\r\nX: " + value + "\r\n\r\n").head?.headers.first("X") == value)
    }

    @Test func enforcesMaxHeadersExactly() {
        let limits = HTTPHeadLimits(maxHeadBytes: 1024, maxHeaders: 3)
        let three = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"
        #expect(Feed.request(three, limits: limits).head?.headers.count == 3)
        let four = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n"
        #expect(Feed.request(four, limits: limits) == .invalid(.tooManyHeaders))
    }

    @Test func enforcesMaxHeadBytesAtTheBoundary() {
        let head = "GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 40) + "\r\n\r\n"
        let size = head.utf8.count
        #expect(Feed.request(head, limits: HTTPHeadLimits(maxHeadBytes: size)).headLength == size)
        #expect(Feed.request(head, limits: HTTPHeadLimits(maxHeadBytes: size - 1)) == .invalid(.headTooLarge))
        #expect(Feed.request(head + "GET", limits: HTTPHeadLimits(maxHeadBytes: size)).headLength == size)
    }

    @Test func refusesOversizeHeadAsSoonAsTheLimitIsPassed() {
        let limit = 64
        let flood = bytes(String(repeating: "A", count: 200))
        var parser = HTTPRequestHeadParser(limits: HTTPHeadLimits(maxHeadBytes: limit))
        var verdictAt: Int?
        for end in 1...flood.count {
            let result = flood.withUnsafeBytes { parser.parse(UnsafeRawBufferPointer(rebasing: $0[0..<end])) }
            if case .invalid(let code) = result {
                #expect(code == .headTooLarge)
                verdictAt = end
                break
            }
        }
        #expect(verdictAt == limit + 1)
        #expect(Feed.headAllWays(HTTPRequestHeadParser.self, flood, limits: HTTPHeadLimits(maxHeadBytes: limit)) == .invalid(.headTooLarge))
    }

    @Test func keepsItsVerdictUntilReset() {
        var parser = HTTPRequestHeadParser()
        let first = bytes("GET /a HTTP/1.1\r\n\r\n")
        let r1 = first.withUnsafeBytes { parser.parse($0) }
        #expect(r1.headLength == first.count)
        #expect(first.withUnsafeBytes { parser.parse($0) } == r1)
        parser.reset()
        let second = bytes("GET /b HTTP/1.1\r\n\r\n")
        #expect(second.withUnsafeBytes { parser.parse($0) }.head?.target == "/b")
    }

    @Test func largeHeadFedByteByByteStaysLinear() {
        // 100 headers near the 32 KiB default: byte-by-byte feeding must not rescan (this
        // would take seconds if every call started over).
        var text = "GET / HTTP/1.1\r\n"
        for i in 0..<100 { text += "X-\(i): " + String(repeating: "v", count: 300) + "\r\n" }
        text += "\r\n"
        let input = bytes(text)
        let result = Feed.headAllWays(HTTPRequestHeadParser.self, input, everySplit: false)
        #expect(result.head?.headers.count == 100)
        #expect(result.headLength == input.count)
    }
}
