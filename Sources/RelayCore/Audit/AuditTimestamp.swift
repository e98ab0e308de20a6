#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The audit trail's time format: UTC with microseconds, `2026-11-30T18:21:44.123456Z`.
///
/// Built by hand on `gmtime_r` because it runs once per audit row on the writer and a
/// `DateFormatter` is both slow and locale-sensitive.
public enum AuditTimestamp {
    /// Formats UTC microseconds since the epoch; always 27 bytes for years 0000-9999.
    public static func format(micros: Int64) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(27)
        append(micros: micros, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the bytes `format(micros:)` returns to `out`, with no allocation once `out`
    /// has room: the audit writer formats straight into its reused row buffer.
    public static func append(micros: Int64, to out: inout [UInt8]) {
        // Floor division so instants before 1970 keep a positive fraction.
        var seconds = micros / 1_000_000
        var fraction = micros % 1_000_000
        if fraction < 0 {
            seconds -= 1
            fraction += 1_000_000
        }
        var t = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&t, &parts) != nil else {
            // Only reachable for years gmtime cannot represent; keep the row writable.
            out.append(contentsOf: "invalid-time:\(micros)".utf8)
            return
        }
        appendDigits(Int(parts.tm_year) + 1900, width: 4, to: &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(Int(parts.tm_mon) + 1, width: 2, to: &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(Int(parts.tm_mday), width: 2, to: &out)
        out.append(UInt8(ascii: "T"))
        appendDigits(Int(parts.tm_hour), width: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(Int(parts.tm_min), width: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(Int(parts.tm_sec), width: 2, to: &out)
        out.append(UInt8(ascii: "."))
        appendDigits(Int(fraction), width: 6, to: &out)
        out.append(UInt8(ascii: "Z"))
    }

    /// The current wall-clock time in UTC microseconds since the epoch.
    public static func nowMicros() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1_000
    }

    /// Zero-padded to `width`, most significant digit first; no temporary digit array.
    private static func appendDigits(_ value: Int, width: Int, to out: inout [UInt8]) {
        var value = value
        if value < 0 {
            out.append(UInt8(ascii: "-"))
            value = -value
        }
        var digits = 1
        var divisor = 1
        while value / divisor >= 10 {
            divisor *= 10
            digits += 1
        }
        for _ in digits..<max(width, digits) {
            out.append(UInt8(ascii: "0"))
        }
        while divisor > 0 {
            out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value / divisor % 10))
            divisor /= 10
        }
    }
}
