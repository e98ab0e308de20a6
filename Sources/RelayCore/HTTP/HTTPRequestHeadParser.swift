/// Incremental, strict parser for a request head (request line + header section).
///
/// Call `parse` with the whole accumulated buffer each time more bytes arrive; it remembers
/// how far it has judged. Once it has answered `.complete` or `.invalid` it keeps giving that
/// answer; call `reset()` before parsing the next message (with a buffer that starts at it).
public struct HTTPRequestHeadParser: Sendable {
    /// The bounds applied to the head.
    public let limits: HTTPHeadLimits
    private var core = HTTPHeadParserCore<HTTPRequestHead>()

    /// Creates a parser enforcing `limits`.
    public init(limits: HTTPHeadLimits = HTTPHeadLimits()) {
        self.limits = limits
    }

    /// Judges the accumulated bytes. `buffer` must start where the previous call's did and be
    /// at least as long.
    public mutating func parse(_ buffer: UnsafeRawBufferPointer) -> HeadParseResult<HTTPRequestHead> {
        core.parse(buffer, limits: limits, extraEmptyLine: .badRequestLine, parseHead: Self.parseHead)
    }

    /// Forgets everything, ready for the next message on the connection.
    public mutating func reset() {
        core.reset()
    }

    /// `method SP request-target SP HTTP-version CRLF` and the field lines, `end` being one
    /// past the final CRLFCRLF.
    private static func parseHead(_ buf: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> Result<HTTPRequestHead, ReasonCode> {
        // The scanner delimited the head, so the start line's CR exists; and CR is neither a
        // tchar nor a target byte, so the two walks below stop at it without a bound check.
        guard let raw = buf.baseAddress, let lineEnd = HTTPByteSearch.first(HTTPBytes.cr, raw, from: start, to: end) else {
            return .failure(.badRequestLine)
        }
        let base = raw.assumingMemoryBound(to: UInt8.self)

        var i = start
        while HTTPBytes.isTokenChar(base[i]) { i += 1 }
        guard i > start, base[i] == HTTPBytes.sp else { return .failure(.badRequestLine) }
        let methodEnd = i
        i += 1
        let targetStart = i
        // Visible ASCII only: spaces, controls and raw non-ASCII have no place in a URI and
        // only serve to make two parsers see two different targets.
        while base[i] > 0x20, base[i] < 0x7F { i += 1 }
        guard i > targetStart, base[i] == HTTPBytes.sp else { return .failure(.badRequestLine) }
        let targetEnd = i
        i += 1
        guard lineEnd - i == 8, let version = HTTPFieldLines.parseVersion(buf, at: i, end: lineEnd) else {
            return .failure(.badRequestLine)
        }
        guard HTTPFieldLines.isSupported(version) else { return .failure(.unsupportedVersion) }

        let headers: HTTPHeaders
        switch HTTPFieldLines.parse(buf, from: lineEnd + 2, end: end - 2) {
        case .success(let parsed): headers = parsed
        case .failure(let code): return .failure(code)
        }
        // Two Host fields let the relay and the origin disagree about the destination.
        var hosts = 0
        for field in headers where HTTPBytes.equalsIgnoringASCIICase(field.name, "Host") {
            hosts += 1
            if hosts > 1 { return .failure(.badHeader) }
        }

        let method = String(decoding: UnsafeRawBufferPointer(start: raw + start, count: methodEnd - start), as: UTF8.self)
        let target = String(decoding: UnsafeRawBufferPointer(start: raw + targetStart, count: targetEnd - targetStart), as: UTF8.self)
        return .success(HTTPRequestHead(method: method, target: target, version: version, headers: headers))
    }
}
