/// Finds where a message head ends, incrementally, and refuses line-ending tricks on the way.
///
/// Both head parsers are fed the whole accumulated buffer on every read; the scanner resumes
/// at the byte after the last one it judged, so feeding a head one byte at a time costs
/// O(n) in total rather than O(n^2). Each byte is judged only from itself and the byte after
/// it, and limits are checked at fixed offsets, which is what makes the verdict the same
/// however the input was split into reads.
struct HTTPHeadScanner: Sendable {
    enum Outcome: Equatable {
        case needMore
        /// `startLine` is where the start line begins (after an allowed leading CRLF);
        /// `headEnd` is one past the final CRLFCRLF.
        case complete(startLine: Int, headEnd: Int)
        case invalid(ReasonCode)
    }

    /// Next byte to judge; everything before it is known to be well-formed framing.
    private var index = 0
    private var lineStart = 0
    private var startLine = 0
    private var sawStartLine = false
    private var sawLeadingEmptyLine = false
    private var fieldLines = 0

    /// Scans the bytes not judged yet. `extraEmptyLine` is the code for a second empty line
    /// before the start line (RFC 9112 2.2 asks us to tolerate one, and no more).
    mutating func scan(_ buf: UnsafeRawBufferPointer, limits: HTTPHeadLimits, extraEmptyLine: ReasonCode) -> Outcome {
        precondition(buf.count >= index, "head parser fed a shorter buffer than last time")
        let limit = limits.maxHeadBytes
        let count = buf.count
        let end = min(count, limit)
        var i = index
        defer { index = i }
        while i < end {
            // Most head bytes are neither CR nor LF: skip them eight at a time.
            while i &+ 8 <= end && !Self.hasLineByte(buf.loadUnaligned(fromByteOffset: i, as: UInt64.self)) {
                i &+= 8
            }
            if i >= end { break }
            let b = buf[i]
            if b > HTTPBytes.cr || (b != HTTPBytes.cr && b != HTTPBytes.lf) {
                i += 1
                continue
            }
            if b == HTTPBytes.lf { return .invalid(.bareLineEnding) }
            // A CR: its LF would sit at i + 1, past the limit, so the head cannot fit.
            if i + 1 >= limit { return .invalid(.headTooLarge) }
            if i + 1 >= count { return .needMore }
            if buf[i + 1] != HTTPBytes.lf { return .invalid(.bareLineEnding) }
            if i == lineStart {
                i += 2
                lineStart = i
                if sawStartLine { return .complete(startLine: startLine, headEnd: i) }
                if sawLeadingEmptyLine { return .invalid(extraEmptyLine) }
                sawLeadingEmptyLine = true
                startLine = i
                continue
            }
            if sawStartLine {
                fieldLines += 1
                if fieldLines > limits.maxHeaders { return .invalid(.tooManyHeaders) }
            } else {
                sawStartLine = true
            }
            i += 2
            lineStart = i
        }
        return count > limit ? .invalid(.headTooLarge) : .needMore
    }

    /// Whether any byte of `word` is CR or LF: the classic SWAR zero-byte test applied to the
    /// word XORed with each pattern (exact as to whether a match exists; which byte it is, the
    /// byte loop then finds).
    private static func hasLineByte(_ word: UInt64) -> Bool {
        let lows: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let cr = word ^ (lows &* 0x0D)
        let lf = word ^ (lows &* 0x0A)
        return (((cr &- lows) & ~cr) | ((lf &- lows) & ~lf)) & highs != 0
    }
}
