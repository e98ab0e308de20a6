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
        guard let base = buf.baseAddress else { return count > limit ? .invalid(.headTooLarge) : .needMore }
        while i < end {
            // Most head bytes are neither CR nor LF: let memchr skip them (it reads a vector at a
            // time). The first line byte decides, so an LF only matters if it comes before the CR.
            let cr = HTTPByteSearch.first(HTTPBytes.cr, base, from: i, to: end)
            if HTTPByteSearch.first(HTTPBytes.lf, base, from: i, to: cr ?? end) != nil { return .invalid(.bareLineEnding) }
            guard let cr else {
                i = end
                break
            }
            i = cr
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
}
