/// The incremental bookkeeping both head parsers share: resume the scanner, parse the head
/// once it is delimited, and keep the verdict until reset.
struct HTTPHeadParserCore<Head: Sendable>: Sendable {
    private var scanner = HTTPHeadScanner()
    /// `.needMore` until the head is judged, then the verdict to repeat. Not an Optional:
    /// unwrapping and assigning one went through unspecialized value witnesses on every call.
    private var verdict: HeadParseResult<Head> = .needMore

    /// `parseHead` gets the start-line offset and the offset one past the final CRLFCRLF.
    mutating func parse(_ buffer: UnsafeRawBufferPointer, limits: HTTPHeadLimits, extraEmptyLine: ReasonCode,
                        parseHead: (UnsafeRawBufferPointer, Int, Int) -> Result<Head, ReasonCode>) -> HeadParseResult<Head> {
        if case .needMore = verdict {} else { return verdict }
        let result: HeadParseResult<Head>
        switch scanner.scan(buffer, limits: limits, extraEmptyLine: extraEmptyLine) {
        case .needMore:
            return .needMore
        case .invalid(let code):
            result = .invalid(code)
        case .complete(let start, let end):
            switch parseHead(buffer, start, end) {
            case .success(let head): result = .complete(head, headLength: end)
            case .failure(let code): result = .invalid(code)
            }
        }
        verdict = result
        return result
    }

    mutating func reset() {
        self = HTTPHeadParserCore()
    }
}
