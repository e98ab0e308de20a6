/// An IPv4 address, parsed only from its canonical dotted-quad form.
///
/// The strict parser exists because the C family (`inet_aton`, `getaddrinfo`) accepts
/// octal, hex, and shortened forms (`0177.1`, `0x7f000001`, `127.1`) that a policy check
/// and a resolver could read differently; we refuse them instead of guessing.
public struct IPv4Address: Hashable, Sendable, CustomStringConvertible {
    /// The address in host byte order: `10.1.2.3` is `0x0A01_0203`.
    public var value: UInt32

    /// Wraps a host-byte-order value.
    public init(_ value: UInt32) {
        self.value = value
    }

    /// Builds `a.b.c.d`.
    public init(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) {
        value = UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)
    }

    /// Parses exactly four decimal parts `0...255` with no leading zeros ("0" itself is fine).
    public init?<S: StringProtocol>(strict text: S) {
        var accumulated: UInt32 = 0
        var part: UInt32 = 0
        var digits = 0
        var dots = 0
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                // A second digit after a lone "0" is a leading zero: octal in inet_aton.
                if digits == 1 && part == 0 { return nil }
                digits += 1
                part = part * 10 + UInt32(byte - UInt8(ascii: "0"))
                if part > 255 { return nil }
            case UInt8(ascii: "."):
                if digits == 0 || dots == 3 { return nil }
                dots += 1
                accumulated = accumulated << 8 | part
                part = 0
                digits = 0
            default:
                return nil
            }
        }
        if digits == 0 || dots != 3 { return nil }
        value = accumulated << 8 | part
    }

    /// The four bytes in network order.
    public var bytes: [UInt8] {
        [UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16),
         UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    /// Canonical dotted quad. Formatted by hand into one stack buffer: it is at most 15
    /// bytes, so the result is a small string with no heap allocation, and the relay builds
    /// several per tunnel (audit columns, connect targets).
    public var description: String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 15) { buffer in
            var count = 0
            for shift in stride(from: 24, through: 0, by: -8) {
                if shift != 24 {
                    buffer[count] = UInt8(ascii: ".")
                    count += 1
                }
                let octet = UInt8(truncatingIfNeeded: value >> UInt32(shift))
                if octet >= 100 {
                    buffer[count] = UInt8(ascii: "0") + octet / 100
                    count += 1
                }
                if octet >= 10 {
                    buffer[count] = UInt8(ascii: "0") + octet / 10 % 10
                    count += 1
                }
                buffer[count] = UInt8(ascii: "0") + octet % 10
                count += 1
            }
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[..<count]), as: UTF8.self)
        }
    }
}
