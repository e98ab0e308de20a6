/// Parses the field lines of a head the scanner has already delimited.
///
/// The scanner guarantees every CR in the range is followed by LF and no LF stands alone, so
/// lines are split on CR alone here.
enum HTTPFieldLines {
    /// Parses field lines from `from` up to `end` (the CR of the final empty line).
    /// Returns the headers or the reason the section is refused.
    static func parse(_ buf: UnsafeRawBufferPointer, from: Int, end: Int) -> Result<HTTPHeaders, ReasonCode> {
        var fields: [HTTPHeader] = []
        fields.reserveCapacity(16)
        var i = from
        while i < end {
            var lineEnd = i
            while buf[lineEnd] != HTTPBytes.cr { lineEnd += 1 }
            switch parseLine(buf, from: i, to: lineEnd) {
            case .success(let field): fields.append(field)
            case .failure(let code): return .failure(code)
            }
            i = lineEnd + 2
        }
        return .success(HTTPHeaders(fields))
    }

    /// One `field-name ":" OWS field-value OWS` line, without its CRLF.
    static func parseLine(_ buf: UnsafeRawBufferPointer, from: Int, to: Int) -> Result<HTTPHeader, ReasonCode> {
        // A line starting with whitespace continues the previous value (obs-fold): parsers
        // disagree on how to unfold it, which is exactly what request smuggling needs.
        if HTTPBytes.isOWS(buf[from]) { return .failure(.obsFold) }
        var k = from
        while k < to && HTTPBytes.isTokenChar(buf[k]) { k += 1 }
        // Whitespace between name and colon is refused (RFC 9112 5.1) for the same reason.
        guard k > from, k < to, buf[k] == HTTPBytes.colon else { return .failure(.badHeader) }
        var v0 = k + 1
        var v1 = to
        while v0 < v1 && HTTPBytes.isOWS(buf[v0]) { v0 += 1 }
        while v1 > v0 && HTTPBytes.isOWS(buf[v1 - 1]) { v1 -= 1 }
        var highBits: UInt8 = 0
        for j in v0..<v1 {
            let b = buf[j]
            guard HTTPBytes.isFieldValueByte(b) else { return .failure(.badHeader) }
            highBits |= b
        }
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: buf[from..<k]), as: UTF8.self)
        let valueBytes = UnsafeRawBufferPointer(rebasing: buf[v0..<v1])
        let value: String
        if highBits < 0x80 {
            value = String(decoding: valueBytes, as: UTF8.self)
        } else {
            guard let decoded = String(validating: valueBytes, as: UTF8.self) else { return .failure(.badHeader) }
            value = decoded
        }
        return .success(HTTPHeader(name: name, value: value))
    }

    /// Parses `HTTP/d.d` at `at`, exactly eight bytes. Returns nil when malformed, and the
    /// version (possibly unsupported) when well-formed, so callers can tell the two apart.
    static func parseVersion(_ buf: UnsafeRawBufferPointer, at: Int, end: Int) -> HTTPVersion? {
        guard end - at >= 8,
              buf[at] == 0x48, buf[at + 1] == 0x54, buf[at + 2] == 0x54, buf[at + 3] == 0x50, buf[at + 4] == 0x2F,
              HTTPBytes.isDigit(buf[at + 5]), buf[at + 6] == 0x2E, HTTPBytes.isDigit(buf[at + 7])
        else { return nil }
        return HTTPVersion(major: Int(buf[at + 5] - 0x30), minor: Int(buf[at + 7] - 0x30))
    }

    /// Only HTTP/1.0 and HTTP/1.1 are spoken here.
    static func isSupported(_ version: HTTPVersion) -> Bool {
        version.major == 1 && (version.minor == 0 || version.minor == 1)
    }
}
