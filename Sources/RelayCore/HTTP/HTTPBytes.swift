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
        // One shift and mask instead of a chain of range compares: every header name and
        // auth-param byte comes through here.
        inSet(b, low: 0x03FF_6CFA_0000_0000, high: 0x57FF_FFFF_C7FF_FFFE)
    }

    /// ASCII case-insensitive equality: header names and auth schemes are tokens, so Unicode
    /// case folding would be wrong (and slower). Lengths are compared first since most names
    /// differ there; the bytes are compared in place (native Strings are contiguous UTF-8,
    /// and reading them so neither copies nor retains), where `utf8.elementsEqual` walked two
    /// generic iterators.
    static func equalsIgnoringASCIICase(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        let inPlace = a.utf8.withContiguousStorageIfAvailable { a in
            b.utf8.withContiguousStorageIfAvailable { b in equalsIgnoringASCIICase(a, b) }
        }
        if let inPlace, let result = inPlace { return result }
        return a.utf8.elementsEqual(b.utf8) { asciiLowercased($0) == asciiLowercased($1) }
    }

    /// True when `a` and `b` hold the same bytes ignoring ASCII case.
    static func equalsIgnoringASCIICase(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var index = 0
        while index < a.count {
            guard asciiLowercased(a[index]) == asciiLowercased(b[index]) else { return false }
            index += 1
        }
        return true
    }

    /// True when bit `b` is set in a set of ASCII bytes given as two 64-bit masks (`low` for
    /// 0–63, `high` for 64–127); no byte above 127 is in any.
    static func inSet(_ b: UInt8, low: UInt64, high: UInt64) -> Bool {
        b < 64 ? (low >> UInt64(b)) & 1 != 0 : b < 128 && (high >> UInt64(b & 63)) & 1 != 0
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
