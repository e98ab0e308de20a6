import Testing
@testable import RelayCore

@Suite("HTTP request head parser against a plain one")
struct HTTPHeadDifferentialTests {
    static let nonce = String(repeating: "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0", count: 2).prefix(64)
    static let seeds = [
        "CONNECT 127.0.0.1:40000 HTTP/1.1\r\nHost: 127.0.0.1:40000\r\n\r\n",
        "CONNECT 127.0.0.1:40000 HTTP/1.1\r\nHost: 127.0.0.1:40000\r\nProxy-Authorization: Digest username=\"alice\", "
            + "realm=\"dynrelay\", nonce=\"\(nonce)\", uri=\"127.0.0.1:40000\", algorithm=SHA-256, qop=auth, nc=00000001, "
            + "cnonce=\"0123456789abcdef\", response=\"\(String(repeating: "0123456789abcdef", count: 4))\", "
            + "opaque=\"abcdefghijklmnopqrstuvwx\"\r\n\r\n",
        "GET http://app.corp:8080/x?y=1 HTTP/1.1\r\nHost: app.corp:8080\r\nX-Name: Zo\u{EB} \t \r\nAccept: */*\r\n\r\n",
        "\r\nPOST / HTTP/1.0\r\nX:\t v\tw \r\nX-Empty:\r\n\r\n",
        // Refused as they stand, so that mutants near these refusals come up too.
        "GET / HTTP/1.1\r\nX: a\r\n\tb\r\nHost: h\r\n\r\n",
        "CONNECT h:1 HTTP/2.0\r\nHost: h:1\r\n\r\n",
    ]
    /// Seeds that are not UTF-8: obs-text values (RFC 9110 5.5), kept byte for byte.
    static let byteSeeds: [[UInt8]] = [
        Array("GET http://a/ HTTP/1.1\r\nHost: a\r\nX-Latin: caf".utf8) + [0xE9, 0x20, 0xA0, 0xFF] + Array("\r\n\r\n".utf8),
        Array("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked".utf8) + [0x85] + Array("\r\n\r\n".utf8),
    ]

    /// Mutated heads, whole, must get the same verdict from the production parser as from
    /// `PlainRequestHeadParser` (splitting is covered by the seeded fuzz suite).
    @Test func mutatedHeadsMatchAPlainParser() {
        var rng = SplitMix64(state: 0xD1FF)
        var disagreements = 0
        var refusals: [ReasonCode: Int] = [:]
        var completes = 0
        for iteration in 0..<20_000 {
            let seed = iteration % 5 == 4 ? Self.byteSeeds.randomElement(using: &rng)! : Array(Self.seeds.randomElement(using: &rng)!.utf8)
            let input = HTTPFuzzTests.mutate(seed, &rng)
            let limits = iteration % 4 == 0 ? HTTPHeadLimits(maxHeadBytes: Int.random(in: 0...420, using: &rng), maxHeaders: Int.random(in: 0...3, using: &rng))
                                            : HTTPHeadLimits()
            let expected = PlainRequestHeadParser.parse(input, limits: limits)
            let actual = Feed.head(HTTPRequestHeadParser.self, input, cuts: [], limits: limits)
            if let code = expected.reason { refusals[code, default: 0] += 1 }
            if expected.head != nil { completes += 1 }
            if actual != expected {
                disagreements += 1
                if disagreements <= 5 { Issue.record("\(actual) != \(expected) on \(input) with \(limits)") }
            }
        }
        #expect(disagreements == 0)
        // Every refusal the head grammar has must come up, or the comparison proves little.
        let codes: [ReasonCode] = [.bareLineEnding, .obsFold, .badHeader, .badRequestLine, .unsupportedVersion, .tooManyHeaders, .headTooLarge]
        #expect(completes > 1_000 && codes.allSatisfy { refusals[$0, default: 0] > 50 }, "complete \(completes), refused \(refusals)")
    }
}

extension HTTPHeadDifferentialTests {
    /// The first refusal a whole request meets on its way through the relay's readers: the
    /// head parser (held to the reference parser too), the framing decision, then the body
    /// framer. Nil when it is accepted.
    static func verdict(_ request: [UInt8]) -> ReasonCode? {
        let parsed = Feed.head(HTTPRequestHeadParser.self, request, cuts: [], limits: HTTPHeadLimits())
        #expect(parsed == PlainRequestHeadParser.parse(request, limits: HTTPHeadLimits()), "the two parsers disagree on \(request)")
        switch parsed {
        case .needMore: return .internalError
        case .invalid(let code): return code
        case .complete(let head, let length):
            switch MessageFraming.request(head) {
            case .failure(let code): return code
            case .success(let framing):
                switch Feed.bodyAllWays(framing, Array(request[length...])) {
                case .invalid(let code): return code
                case .done, .open: return nil
                }
            }
        }
    }

    /// The forms accepted for real clients (obs-text, whitespace before a chunk extension)
    /// open no new reading of where a message ends: every smuggling refusal stands, obs-text
    /// included where it would disguise a framing field.
    @Test("smuggling refusals are unchanged by the lenient forms", arguments: [
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", ReasonCode.ambiguousFraming),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", .duplicateContentLength),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello", .duplicateContentLength),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nX: a\r\n Transfer-Encoding: chunked\r\n\r\n", .obsFold),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nX: a\rTransfer-Encoding: chunked\r\n\r\n", .bareLineEnding),
        ("POST http://a/ HTTP/1.1\r\nHost: a\nTransfer-Encoding: chunked\r\n\r\n", .bareLineEnding),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n", .badHeader),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n", .badChunk),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n", .badChunk),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 5\r\nhello\r\n0\r\n\r\n", .badChunk),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", .badChunk),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n", .badChunk),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5; e\r\nhello\r\n0\r\n\r\n", .badChunk),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", .badChunk),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\n", .badChunk),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n5\r\nhello\r\n0\r\n\r\n", .badTransferEncoding),
        ("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", .badTransferEncoding),
        ("GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", .badHeader),
    ])
    func smugglingRefusalsStand(request: String, expected: ReasonCode) {
        #expect(Self.verdict(Array(request.utf8)) == expected)
    }

    /// obs-text next to a framing token never reads as that token: `chunked` followed or led
    /// by a byte such as 0x85 (NEL) or 0xA0 (no-break space), which some decoders take for
    /// whitespace, is not chunked, and a Content-Length with one is not a number.
    @Test func obsTextNeverDisguisesAFramingField() {
        let head = Array("POST http://a/ HTTP/1.1\r\nHost: a\r\n".utf8)
        let body = Array("\r\n\r\n5\r\nhello\r\n0\r\n\r\n".utf8)
        for disguise: UInt8 in [0x85, 0xA0, 0xFF] {
            let te = Array("Transfer-Encoding: ".utf8)
            #expect(Self.verdict(head + te + Array("chunked".utf8) + [disguise] + body) == .badTransferEncoding, "\(disguise)")
            #expect(Self.verdict(head + te + [disguise] + Array("chunked".utf8) + body) == .badTransferEncoding, "\(disguise)")
            #expect(Self.verdict(head + Array("Content-Length: 5".utf8) + [disguise] + body) == .badContentLength, "\(disguise)")
            #expect(Self.verdict(head + Array("Content-Length: 5\r\nTransfer-Encoding: ".utf8) + [disguise] + body)
                    == .ambiguousFraming, "\(disguise)")
        }
        // Accepted: obs-text in an ordinary field, BWS before a chunk extension.
        #expect(Self.verdict(head + Array("X-Latin: caf".utf8) + [0xE9] + Array("\r\nContent-Length: 0\r\n\r\n".utf8)) == nil)
        #expect(Self.verdict(Array("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 ;e\r\nhello\r\n0\r\n\r\n".utf8))
                == nil)
    }
}

/// A request head parsed the plain way, one byte at a time and from the whole buffer: the
/// reference `mutatedHeadsMatchAPlainParser` holds the production parser to.
enum PlainRequestHeadParser {
    static func parse(_ buf: [UInt8], limits: HTTPHeadLimits) -> HeadParseResult<HTTPRequestHead> {
        let cr = HTTPBytes.cr, lf = HTTPBytes.lf
        var i = 0, lineStart = 0, startLine = 0, fieldLines = 0
        var sawStartLine = false, sawLeadingEmptyLine = false
        while i < min(buf.count, limits.maxHeadBytes) {
            if buf[i] == lf { return .invalid(.bareLineEnding) }
            if buf[i] != cr { i += 1; continue }
            if i + 1 >= limits.maxHeadBytes { return .invalid(.headTooLarge) }
            if i + 1 >= buf.count { return .needMore }
            if buf[i + 1] != lf { return .invalid(.bareLineEnding) }
            if i == lineStart {
                i += 2
                lineStart = i
                if sawStartLine {
                    switch head(buf, start: startLine, end: i) {
                    case .success(let head): return .complete(head, headLength: i)
                    case .failure(let code): return .invalid(code)
                    }
                }
                if sawLeadingEmptyLine { return .invalid(.badRequestLine) }
                sawLeadingEmptyLine = true
                startLine = i
                continue
            }
            if sawStartLine {
                fieldLines += 1
                if fieldLines > limits.maxHeaders { return .invalid(.tooManyHeaders) }
            }
            sawStartLine = true
            i += 2
            lineStart = i
        }
        return buf.count > limits.maxHeadBytes ? .invalid(.headTooLarge) : .needMore
    }

    private static func head(_ buf: [UInt8], start: Int, end: Int) -> Result<HTTPRequestHead, ReasonCode> {
        let lines = lines(buf, from: start, end: end - 2)
        let words = lines[0].split(separator: HTTPBytes.sp, omittingEmptySubsequences: false)
        guard words.count == 3, !words[0].isEmpty, words[0].allSatisfy(PlainAuthParamParser.isTokenChar),
              !words[1].isEmpty, words[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
              words[2].count == 8, words[2].starts(with: Array("HTTP/".utf8)),
              PlainHTTP.isDigit(words[2][words[2].startIndex + 5]), words[2][words[2].startIndex + 6] == 0x2E,
              PlainHTTP.isDigit(words[2][words[2].startIndex + 7])
        else { return .failure(.badRequestLine) }
        let version = HTTPVersion(major: Int(words[2][words[2].startIndex + 5] - 0x30), minor: Int(words[2][words[2].startIndex + 7] - 0x30))
        guard version == .http1_0 || version == .http1_1 else { return .failure(.unsupportedVersion) }
        var headers = HTTPHeaders()
        for line in lines.dropFirst() {
            if let first = line.first, PlainHTTP.isOWS(first) { return .failure(.obsFold) }
            guard let colon = line.firstIndex(of: HTTPBytes.colon), colon > line.startIndex,
                  line[..<colon].allSatisfy(PlainAuthParamParser.isTokenChar) else { return .failure(.badHeader) }
            var value = line[(colon + 1)...]
            while let b = value.first, PlainHTTP.isOWS(b) { value = value.dropFirst() }
            while let b = value.last, PlainHTTP.isOWS(b) { value = value.dropLast() }
            guard value.allSatisfy(PlainHTTP.isFieldValueByte) else { return .failure(.badHeader) }
            // obs-text (RFC 9110 5.5) is accepted: UTF-8 as text, other bytes kept one scalar each.
            let name = String(decoding: line[..<colon], as: UTF8.self)
            if let text = String(validating: value, as: UTF8.self) {
                headers.append(name: name, value: text)
            } else {
                let text = String(String.UnicodeScalarView(value.map { Unicode.Scalar($0) }))
                headers.fields.append(HTTPHeader(name: name, value: text, valueEncoding: .isoLatin1))
            }
        }
        guard headers.values("host").count <= 1 else { return .failure(.badHeader) }
        return .success(HTTPRequestHead(method: String(decoding: words[0], as: UTF8.self),
                                        target: String(decoding: words[1], as: UTF8.self), version: version, headers: headers))
    }

    /// The lines from `from` up to the final empty line's CR at `end`, without their CRLFs.
    private static func lines(_ buf: [UInt8], from: Int, end: Int) -> [ArraySlice<UInt8>] {
        var result: [ArraySlice<UInt8>] = []
        var lineStart = from
        for i in from..<end where buf[i] == HTTPBytes.cr {
            result.append(buf[lineStart..<i])
            lineStart = i + 2
        }
        return result
    }
}

/// The byte classes the reference parser uses, spelled out from RFC 9110/9112 rather than
/// taken from the production `HTTPBytes`, so a bug there cannot hide in both.
enum PlainHTTP {
    static func isOWS(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
    static func isFieldValueByte(_ b: UInt8) -> Bool { b == 0x09 || (b >= 0x20 && b != 0x7F) }
    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
}
