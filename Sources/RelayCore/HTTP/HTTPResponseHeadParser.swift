/// Incremental, strict parser for a response head from an upstream server.
///
/// Same contract as `HTTPRequestHeadParser`. Framing faults share the request codes
/// (`.bareLineEnding`, `.obsFold`, `.badHeader`, `.tooManyHeaders`, `.headTooLarge`); a
/// malformed status line (or a second empty line before it) is `.badUpstreamResponse`, and a
/// well-formed version other than 1.0/1.1 is `.unsupportedVersion`. Callers answer any of
/// them with 502.
public struct HTTPResponseHeadParser: Sendable {
    /// The bounds applied to the head.
    public let limits: HTTPHeadLimits
    private var core = HTTPHeadParserCore<HTTPResponseHead>()

    /// Creates a parser enforcing `limits`.
    public init(limits: HTTPHeadLimits = HTTPHeadLimits()) {
        self.limits = limits
    }

    /// Judges the accumulated bytes. `buffer` must start where the previous call's did and be
    /// at least as long.
    public mutating func parse(_ buffer: UnsafeRawBufferPointer) -> HeadParseResult<HTTPResponseHead> {
        core.parse(buffer, limits: limits, extraEmptyLine: .badUpstreamResponse, parseHead: Self.parseHead)
    }

    /// Forgets everything, ready for the next response on the connection.
    public mutating func reset() {
        core.reset()
    }

    /// `HTTP-version SP 3DIGIT [SP reason-phrase] CRLF` and the field lines. The reason
    /// phrase may be empty with or without its SP; many servers omit both.
    private static func parseHead(_ buf: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> Result<HTTPResponseHead, ReasonCode> {
        // The scanner delimited the head, so the status line's CR exists.
        guard let raw = buf.baseAddress, let lineEnd = HTTPByteSearch.first(HTTPBytes.cr, raw, from: start, to: end) else {
            return .failure(.badUpstreamResponse)
        }

        guard lineEnd - start >= 12,
              let version = HTTPFieldLines.parseVersion(buf, at: start, end: lineEnd),
              buf[start + 8] == HTTPBytes.sp,
              HTTPBytes.isDigit(buf[start + 9]), HTTPBytes.isDigit(buf[start + 10]), HTTPBytes.isDigit(buf[start + 11])
        else { return .failure(.badUpstreamResponse) }
        guard HTTPFieldLines.isSupported(version) else { return .failure(.unsupportedVersion) }
        let status = Int(buf[start + 9] - 0x30) * 100 + Int(buf[start + 10] - 0x30) * 10 + Int(buf[start + 11] - 0x30)
        // Only the classes RFC 9110 defines: anything else has no agreed meaning to relay.
        guard (100...599).contains(status) else { return .failure(.badUpstreamResponse) }

        var reason = ""
        let afterStatus = start + 12
        if afterStatus < lineEnd {
            guard buf[afterStatus] == HTTPBytes.sp else { return .failure(.badUpstreamResponse) }
            let phrase = UnsafeRawBufferPointer(rebasing: buf[(afterStatus + 1)..<lineEnd])
            for b in phrase where !HTTPBytes.isFieldValueByte(b) { return .failure(.badUpstreamResponse) }
            guard let decoded = HTTPBytes.string(phrase) else { return .failure(.badUpstreamResponse) }
            reason = decoded
        }

        switch HTTPFieldLines.parse(buf, from: lineEnd + 2, end: end - 2) {
        case .success(let headers):
            return .success(HTTPResponseHead(version: version, status: status, reason: reason, headers: headers))
        case .failure(let code):
            return .failure(code)
        }
    }
}
