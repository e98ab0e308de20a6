import RelayCore
import Testing

/// Line framing at the length limit, however the helper's output is split into reads.
@Suite struct HelperLineBufferTests {
    /// A line of exactly the limit, ended by CR LF, whose LF comes in a later read than its
    /// CR: the CR is not part of the line, so the line is not too long.
    @Test func aLineAtTheLimitIsKeptWhenItsCRLFIsSplit() {
        let stream = Array("OK user=alice123\r\nERR\n".utf8)
        for cut in 0...stream.count {
            var buffer = HelperLineBuffer(maxLineLength: 16)
            var lines: [String] = []
            for part in [stream[..<cut], stream[cut...]] {
                Array(part).withUnsafeBytes { buffer.append($0) }
                while case .line(let line) = buffer.next() { lines.append(String(decoding: line, as: UTF8.self)) }
                #expect(buffer.next() == .needMore, "cut at \(cut)")
            }
            #expect(lines == ["OK user=alice123", "ERR"], "cut at \(cut)")
        }
    }

    /// One byte more is too long whether or not a CR follows it.
    @Test func aLinePastTheLimitIsTooLongAtEveryCut() {
        let stream = Array("OK user=alice1234\r\n".utf8)
        for cut in 0...stream.count {
            var buffer = HelperLineBuffer(maxLineLength: 16)
            var verdicts: [HelperLineBuffer.Next] = []
            for part in [stream[..<cut], stream[cut...]] {
                Array(part).withUnsafeBytes { buffer.append($0) }
                verdicts.append(buffer.next())
            }
            #expect(verdicts.contains(.tooLong) && !verdicts.contains { if case .line = $0 { true } else { false } },
                    "cut at \(cut): \(verdicts)")
        }
    }
}
