import Testing
@testable import RelayCore

@Suite("HTTP body framer")
struct HTTPBodyFramerTests {
    static let nextMessage = "GET /next HTTP/1.1\r\nHost: a\r\n\r\n"

    @Test(arguments: [
        "4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n",
        "4\r\nWiki\r\n5;ext\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n\r\n",
        "a;name=value;n2=\"quoted \\\" \\\\ ;=\"\r\n0123456789\r\n0;last\r\n\r\n",
        "00004\r\nWiki\r\n0\r\nExpires: never\r\nX-Checksum: abc \t def\r\n\r\n",
        "1\r\n\r\r\n0\r\n\r\n",
        "0\r\n\r\n",
        "000\r\n\r\n",
        "FfFf;x=y\r\n" + String(repeating: "z", count: 0xFFFF) + "\r\n0\r\n\r\n",
        // BWS before `;` (RFC 9112 7.1.1), after the size and between extensions.
        "5 ;e\r\nhello\r\n0\r\n\r\n",
        "5\t;e=v\r\nhello\r\n0 \t ;last\r\n\r\n",
        "5;a=1 ;b=\"q\"\t;c\r\nhello\r\n0\r\n\r\n",
    ])
    func chunkedEndsExactlyWhereItShould(body: String) {
        let message = bytes(body)
        let input = message + bytes(Self.nextMessage)
        #expect(Feed.bodyAllWays(.chunked, input) == .done(at: message.count))
    }

    @Test(arguments: [
        "g\r\n",
        "\r\n",
        ";ext\r\n",
        " 4\r\nWiki\r\n0\r\n\r\n",
        "4 \r\nWiki\r\n0\r\n\r\n",
        "4\nWiki\r\n0\r\n\r\n",
        "4\r\rWiki",
        "-1\r\n",
        "0x4\r\nWiki\r\n0\r\n\r\n",
        "4\r\nWikiX\r\n0\r\n\r\n",
        "4\r\nWiki\n0\r\n\r\n",
        "4\r\nWiki\r\r",
        "4;\r\nWiki\r\n",
        "4;=x\r\nWiki\r\n",
        "4;a=\r\nWiki\r\n",
        "4;a b\r\n",
        "4; a\r\n",
        "4;a=\"x\r\n",
        "4;a=\"x\"y\r\n",
        "4;a=b=c\r\n",
        // Whitespace is accepted only before a `;`: never before the line end, after `;`,
        // around `=`, inside the size, or before it.
        "4 \r\nWiki\r\n0\r\n\r\n",
        "4\t\r\nWiki\r\n0\r\n\r\n",
        "4 ;a \r\nWiki\r\n",
        "4;a=1 \r\nWiki\r\n",
        "4; ;a\r\n",
        "4 ; a\r\n",
        "4;a =1\r\n",
        "4;a= 1\r\n",
        "4 4\r\n",
        "4 x\r\n",
        " ;a\r\n",
        "4 \n",
        "4 \r;a\r\n",
        "0 \r\n\r\n",
        "11111111111111111\r\n",
        "0\r\n x: y\r\n\r\n",
        "0\r\nNoColon\r\n\r\n",
        "0\r\nX : y\r\n\r\n",
        "0\r\nX: a\u{0}\r\n\r\n",
        "0\r\nX: a\n\r\n",
        "0\r\n\n",
        "0\r\n\r\r",
        "0\n\r\n",
    ])
    func chunkedRefusesBadSyntax(body: String) {
        #expect(Feed.bodyAllWays(.chunked, bytes(body + "\r\n\r\n")) == .invalid(.badChunk))
    }

    @Test func chunkSizeOfSixteenHexDigitsIsAcceptedSeventeenIsNot() {
        #expect(Feed.bodyAllWays(.chunked, bytes("ffffffffffffffff\r\nabc")) == .open(accepted: 21))
        #expect(Feed.bodyAllWays(.chunked, bytes("0000000000000000a\r\n")) == .invalid(.badChunk))
    }

    @Test func chunkSizeLineIsBoundedTo4KiB() {
        let prefix = "1;e="
        let fits = prefix + String(repeating: "v", count: BodyFramer.maxChunkLineBytes - prefix.utf8.count - 2) + "\r\nx\r\n0\r\n\r\n"
        #expect(Feed.body(.chunked, bytes(fits), cuts: []) == .done(at: fits.utf8.count))
        let tooLong = prefix + String(repeating: "v", count: BodyFramer.maxChunkLineBytes - prefix.utf8.count - 1) + "\r\nx\r\n0\r\n\r\n"
        #expect(Feed.body(.chunked, bytes(tooLong), cuts: []) == .invalid(.badChunk))
    }

    @Test func trailerSectionIsBounded() {
        let limits = HTTPHeadLimits(maxHeadBytes: 32, maxHeaders: 2)
        #expect(Feed.bodyAllWays(.chunked, bytes("0\r\nA: 1\r\nB: 2\r\n\r\n"), limits: limits) == .done(at: 17))
        #expect(Feed.bodyAllWays(.chunked, bytes("0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"), limits: limits) == .invalid(.badChunk))
        #expect(Feed.bodyAllWays(.chunked, bytes("0\r\nA: " + String(repeating: "x", count: 30) + "\r\n\r\n"), limits: limits) == .invalid(.badChunk))
    }

    @Test func contentLengthEndsExactlyAtTheBoundary() {
        let body = bytes("0123456789")
        #expect(Feed.bodyAllWays(.contentLength(10), body) == .done(at: 10))
        #expect(Feed.bodyAllWays(.contentLength(10), body + bytes(Self.nextMessage)) == .done(at: 10))
        #expect(Feed.bodyAllWays(.contentLength(11), body) == .open(accepted: 10))

        var framer = BodyFramer(.contentLength(10))
        #expect(body.withUnsafeBytes { framer.consume(UnsafeRawBufferPointer(rebasing: $0[0..<4])) } == .body(4))
        #expect(!framer.isComplete)
        #expect(body.withUnsafeBytes { framer.consume(UnsafeRawBufferPointer(rebasing: $0[4..<10])) } == .done(6))
        #expect(framer.isComplete)
        #expect(body.withUnsafeBytes { framer.consume($0) } == .done(0))
        #expect(framer.bodyBytesSeen == 10)
    }

    @Test func emptyBodiesAreCompleteAtOnce() {
        for framing in [BodyFraming.none, .contentLength(0)] {
            var framer = BodyFramer(framing)
            #expect(framer.isComplete)
            #expect(bytes("GET").withUnsafeBytes { framer.consume($0) } == .done(0))
        }
    }

    @Test func untilCloseNeverEnds() {
        var framer = BodyFramer(.untilClose)
        #expect(bytes("abc\r\n\r\n").withUnsafeBytes { framer.consume($0) } == .body(7))
        #expect(!framer.isComplete)
        #expect(framer.bodyBytesSeen == 7)
    }

    @Test func invalidIsSticky() {
        var framer = BodyFramer(.chunked)
        #expect(bytes("zz").withUnsafeBytes { framer.consume($0) } == .invalid(.badChunk))
        #expect(bytes("0\r\n\r\n").withUnsafeBytes { framer.consume($0) } == .invalid(.badChunk))
    }

    @Test func oneGiBContentLengthWithConstantMemory() {
        let slice = [UInt8](repeating: 0x61, count: 64 * 1024)
        let total: UInt64 = 1 << 30
        var framer = BodyFramer(.contentLength(total))
        var feeds = 0
        var last = BodyProgress.body(0)
        slice.withUnsafeBytes { buffer in
            while feeds < 16384 {
                last = framer.consume(buffer)
                feeds += 1
                if case .done = last { break }
                guard last == .body(slice.count) else { break }
            }
        }
        #expect(feeds == 16384)
        #expect(last == .done(slice.count))
        #expect(framer.bodyBytesSeen == total)
        #expect(framer.isComplete)
    }

    @Test func oneGiBChunkStreamsWithConstantMemory() {
        let slice = [UInt8](repeating: 0x62, count: 64 * 1024)
        var framer = BodyFramer(.chunked)
        #expect(bytes("40000000\r\n").withUnsafeBytes { framer.consume($0) } == .body(10))
        var ok = true
        slice.withUnsafeBytes { buffer in
            for _ in 0..<16384 where framer.consume(buffer) != .body(slice.count) { ok = false; break }
        }
        #expect(ok)
        #expect(bytes("\r\n0\r\n\r\nX").withUnsafeBytes { framer.consume($0) } == .done(7))
        #expect(framer.bodyBytesSeen == (1 << 30) + 17)
    }

    @Test func payloadRangesAreExactlyTheChunkDataAtEverySplit() {
        let body = Array("4;a=b\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nT: v\r\n\r\nNEXT".utf8)
        let messageEnd = body.count - 4
        for split in 0...body.count {
            var framer = BodyFramer(.chunked)
            var payload: [UInt8] = []
            var consumed = 0
            var done = false
            for part in [body[..<split], body[split...]] where !done {
                part.withUnsafeBytes { raw in
                    switch framer.consume(raw, payload: { payload += raw[$0] }) {
                    case .body(let count): consumed += count
                    case .done(let count): consumed += count; done = true
                    case .invalid: Issue.record("split \(split): invalid")
                    }
                }
            }
            #expect(done, "split \(split)")
            #expect(consumed == messageEnd, "split \(split)")
            #expect(String(decoding: payload, as: UTF8.self) == "Wikipedia in\r\n\r\nchunks.", "split \(split)")
        }
    }

    @Test func payloadOfContentLengthIsTheBodyItself() {
        var framer = BodyFramer(.contentLength(3))
        var ranges: [Range<Int>] = []
        let bytes: [UInt8] = Array("abcdef".utf8)
        let progress = bytes.withUnsafeBytes { framer.consume($0, payload: { ranges.append($0) }) }
        #expect(progress == .done(3))
        #expect(ranges == [0..<3])
    }
}

