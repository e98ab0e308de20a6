/// Byte classes from RFC 9110/9112, as branch-only functions so the hot scanning loops
/// touch no tables or globals.
enum HTTPBytes {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A

    /// tchar: "!#$%&'*+-.^_`|~" / DIGIT / ALPHA (RFC 9110 5.6.2).
    static func isTokenChar(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: return true
        default: return false
        }
    }

    /// Bytes allowed inside a field value: VCHAR, SP, HTAB and obs-text; every other control
    /// byte (NUL, CR, LF, DEL, ...) is a smuggling vector and refused.
    static func isFieldValueByte(_ b: UInt8) -> Bool {
        b == htab || (b >= 0x20 && b != 0x7F)
    }

    /// Whitespace that may surround a field value (OWS).
    static func isOWS(_ b: UInt8) -> Bool { b == sp || b == htab }

    static func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }

    /// Value of an ASCII hex digit, or nil.
    static func hexValue(_ b: UInt8) -> UInt64? {
        switch b {
        case 0x30...0x39: return UInt64(b - 0x30)
        case 0x41...0x46: return UInt64(b - 0x41 + 10)
        case 0x61...0x66: return UInt64(b - 0x61 + 10)
        default: return nil
        }
    }

    static func asciiLowercased(_ b: UInt8) -> UInt8 {
        (b >= 0x41 && b <= 0x5A) ? b | 0x20 : b
    }

    /// Parses 1*DIGIT as an unsigned integer, refusing empty input, any non-digit and
    /// overflow, so "+5", " 5", "5 " and 20-digit values never slip through `UInt64(_:)`'s
    /// own looser rules.
    static func parseDecimal<C: Collection>(_ bytes: C, max: UInt64 = .max) -> UInt64? where C.Element == UInt8 {
        guard !bytes.isEmpty else { return nil }
        var value: UInt64 = 0
        for b in bytes {
            guard isDigit(b) else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(b - 0x30))
            guard !o1, !o2, sum <= max else { return nil }
            value = sum
        }
        return value
    }

    /// Decodes bytes that must be valid UTF-8. Forwarded heads are rebuilt from these strings,
    /// so a lossy decode would silently alter what upstream receives; invalid input is refused.
    static func string(_ bytes: UnsafeRawBufferPointer) -> String? {
        var ascii = true
        for b in bytes where b >= 0x80 { ascii = false; break }
        if ascii { return String(decoding: bytes, as: UTF8.self) }
        return String(validating: bytes, as: UTF8.self)
    }
}
