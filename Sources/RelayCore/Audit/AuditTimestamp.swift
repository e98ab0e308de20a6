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
        let formatter = Formatter()
        return withExtendedLifetime(formatter) { String(decoding: formatter.format(micros: micros), as: UTF8.self) }
    }

    /// Formats into one reused buffer and calls `gmtime_r` only when the second changes: it
    /// runs for every audit row on the writer, and `gmtime_r` takes glibc's time-zone lock.
    /// Not thread-safe: each writer owns one.
    public final class Formatter {
        private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
        /// The second whose `YYYY-MM-DDTHH:MM:SS.` is in `buffer[..<prefixCount]`, if any.
        private var cachedSecond: Int64?
        private var prefixCount = 0

        public init() {}

        deinit {
            buffer.deallocate()
        }

        /// The bytes `AuditTimestamp.format(micros:)` returns, valid until the next call.
        public func format(micros: Int64) -> UnsafeRawBufferPointer {
            // Floor division so instants before 1970 keep a positive fraction.
            var seconds = micros / 1_000_000
            var fraction = micros % 1_000_000
            if fraction < 0 {
                seconds -= 1
                fraction += 1_000_000
            }
            if seconds != cachedSecond {
                guard let prefix = AuditTimestamp.prefix(seconds: seconds) else {
                    // Only reachable for years gmtime cannot represent; keep the row writable.
                    cachedSecond = nil
                    let text = Array("invalid-time:\(micros)".utf8.prefix(buffer.count))
                    buffer.copyBytes(from: text)
                    return UnsafeRawBufferPointer(rebasing: buffer[..<text.count])
                }
                buffer.copyBytes(from: prefix)
                prefixCount = prefix.count
                cachedSecond = seconds
            }
            var rest = Int(fraction)
            for at in stride(from: prefixCount + 5, through: prefixCount, by: -1) {
                buffer[at] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            }
            buffer[prefixCount + 6] = UInt8(ascii: "Z")
            return UnsafeRawBufferPointer(rebasing: buffer[..<(prefixCount + 7)])
        }
    }

    /// `YYYY-MM-DDTHH:MM:SS.` of `seconds` since the epoch in UTC, or nil past gmtime's range.
    private static func prefix(seconds: Int64) -> [UInt8]? {
        var t = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&t, &parts) != nil else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(24)
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
        return out
    }

    /// The format with every digit as `0`.
    public static let shape = Array("0000-00-00T00:00:00.000000Z".utf8)

    /// True when `bytes` follow `shape` for as long as they go: a digit wherever it has one,
    /// the same byte elsewhere. Says nothing about the values (month 13 passes).
    public static func hasShape(_ bytes: [UInt8]) -> Bool {
        guard bytes.count <= shape.count else { return false }
        for (byte, expected) in zip(bytes, shape) {
            let isDigit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            guard expected == UInt8(ascii: "0") ? isDigit : byte == expected else { return false }
        }
        return true
    }

    /// The microseconds a 27-byte `format(micros:)` string stands for, or nil for anything
    /// else (the writer reads its tail row's time back to keep `ts` from going backwards).
    public static func parse(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == shape.count, hasShape(bytes) else { return nil }
        func number(_ range: Range<Int>) -> Int {
            bytes[range].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        }
        var parts = tm()
        parts.tm_year = Int32(number(0..<4) - 1900)
        parts.tm_mon = Int32(number(5..<7) - 1)
        parts.tm_mday = Int32(number(8..<10))
        parts.tm_hour = Int32(number(11..<13))
        parts.tm_min = Int32(number(14..<16))
        parts.tm_sec = Int32(number(17..<19))
        let seconds = Int64(timegm(&parts))
        let micros = seconds * 1_000_000 + Int64(number(20..<26))
        // timegm normalises out-of-range fields (month 13, second 61): refuse those.
        return format(micros: micros) == text ? micros : nil
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
