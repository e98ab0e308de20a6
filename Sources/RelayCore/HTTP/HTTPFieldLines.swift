/// Parses the field lines of a head the scanner has already delimited.
///
/// The scanner guarantees every CR in the range is followed by LF and no LF stands alone, so
/// lines are split on CR alone here.
enum HTTPFieldLines {
    /// Parses field lines from `from` up to `end` (the CR of the final empty line).
    /// Returns the headers or the reason the section is refused.
    ///
    /// Each line is walked once, name then value, and the walk that checks the value's bytes is
    /// also what finds the line's CR: a separate search for it first was a second pass over
    /// the longest part of the head (a Digest `Proxy-Authorization` is over 300 bytes).
    static func parse(_ buf: UnsafeRawBufferPointer, from: Int, end: Int) -> Result<HTTPHeaders, ReasonCode> {
        guard from < end, let base = buf.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            return .success(HTTPHeaders())
        }
        var fields: [HTTPHeader] = []
        fields.reserveCapacity(16)
        var i = from
        while i < end {
            switch parseLine(base, from: i, end: end) {
            case .success(let (field, lineEnd)):
                fields.append(field)
                i = lineEnd + 2
            case .failure(let code):
                return .failure(code)
            }
        }
        return .success(HTTPHeaders(fields))
    }

    /// One `field-name ":" OWS field-value OWS` line starting at `from`, and the offset of the
    /// CR ending it. `end` is the CR of the final empty line, so every walk below stops at a CR
    /// no later than it without checking a bound: CR is neither a tchar, nor OWS, nor a field
    /// value byte.
    private static func parseLine(_ base: UnsafePointer<UInt8>, from: Int, end: Int) -> Result<(HTTPHeader, Int), ReasonCode> {
        // A line starting with whitespace continues the previous value (obs-fold): parsers
        // disagree on how to unfold it, which is exactly what request smuggling needs.
        if HTTPBytes.isOWS(base[from]) { return .failure(.obsFold) }
        var k = from
        while HTTPBytes.isTokenChar(base[k]) { k += 1 }
        // Whitespace between name and colon is refused (RFC 9112 5.1) for the same reason.
        guard k > from, base[k] == HTTPBytes.colon else { return .failure(.badHeader) }
        var v0 = k + 1
        while HTTPBytes.isOWS(base[v0]) { v0 += 1 }
        let (lineEnd, nonASCII) = HTTPFieldValueScan.scan(base, from: v0, limit: end)
        guard base[lineEnd] == HTTPBytes.cr else { return .failure(.badHeader) }
        var v1 = lineEnd
        while v1 > v0 && HTTPBytes.isOWS(base[v1 - 1]) { v1 -= 1 }
        let name = String(decoding: UnsafeRawBufferPointer(start: base + from, count: k - from), as: UTF8.self)
        let valueBytes = UnsafeRawBufferPointer(start: base + v0, count: v1 - v0)
        guard nonASCII else {
            return .success((HTTPHeader(name: name, value: String(decoding: valueBytes, as: UTF8.self)), lineEnd))
        }
        // obs-text (RFC 9110 5.5) is accepted: UTF-8 is read as text, anything else is kept
        // byte for byte, so the relay forwards exactly what it received and decides nothing
        // on a lossy reading of it.
        if let decoded = String(validating: valueBytes, as: UTF8.self) {
            return .success((HTTPHeader(name: name, value: decoded), lineEnd))
        }
        return .success((HTTPHeader(name: name, isoLatin1: valueBytes), lineEnd))
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
