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
            return "invalid-time:\(micros)"
        }
        var out: [UInt8] = []
        out.reserveCapacity(27)
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
        return String(decoding: out, as: UTF8.self)
    }

    /// The current wall-clock time in UTC microseconds since the epoch.
    public static func nowMicros() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1_000
    }

    private static func appendDigits(_ value: Int, width: Int, to out: inout [UInt8]) {
        var value = value
        if value < 0 {
            out.append(UInt8(ascii: "-"))
            value = -value
        }
        var digits: [UInt8] = []
        repeat {
            digits.append(UInt8(ascii: "0") + UInt8(value % 10))
            value /= 10
        } while value > 0
        if digits.count < width {
            out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - digits.count))
        }
        out.append(contentsOf: digits.reversed())
    }
}
