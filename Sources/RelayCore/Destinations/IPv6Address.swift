import Glibc

/// An IPv6 address (16 bytes), without zone id.
public struct IPv6Address: Hashable, Sendable, CustomStringConvertible {
    /// The first 8 bytes, big-endian.
    public var high: UInt64
    /// The last 8 bytes, big-endian.
    public var low: UInt64

    /// Wraps the two halves of the address.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The address `::ffff:a.b.c.d` that an IPv6 socket uses to reach `v4`.
    public init(mapping v4: IPv4Address) {
        high = 0
        low = 0xffff_0000_0000 | UInt64(v4.value)
    }

    /// Builds an address from exactly 16 network-order bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for index in 0..<8 { high = high << 8 | UInt64(bytes[index]) }
        for index in 8..<16 { low = low << 8 | UInt64(bytes[index]) }
        self.init(high: high, low: low)
    }

    /// Parses textual IPv6 (no brackets, no zone id) with `inet_pton` semantics.
    ///
    /// `inet_pton` is strict already (no zone ids, at most 4 hex digits a group, dotted quad
    /// only at the end and without leading zeros); we pre-filter the alphabet and length
    /// because it reads a C string: an embedded NUL would otherwise cut the text short.
    public init?<S: StringProtocol>(text: S) {
        let utf8 = Array(text.utf8)
        guard (2...45).contains(utf8.count) else { return nil }
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
                 UInt8(ascii: "A")...UInt8(ascii: "F"), UInt8(ascii: ":"), UInt8(ascii: "."):
                continue
            default:
                return nil
            }
        }
        var raw = in6_addr()
        let status = (utf8 + [0]).withUnsafeBufferPointer { buffer -> Int32 in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                inet_pton(AF_INET6, chars.baseAddress, &raw)
            }
        }
        guard status == 1 else { return nil }
        let parsed = withUnsafeBytes(of: &raw) { Array($0) }
        self.init(bytes: parsed)
    }

    /// The 16 bytes in network order.
    public var bytes: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64($0))) }
    }

    /// True for `::ffff:a.b.c.d`: it reaches an IPv4 host while looking like IPv6, so it
    /// is the classic way to slip past an IPv4-only rule.
    public var isIPv4Mapped: Bool {
        high == 0 && low >> 32 == 0xffff
    }

    /// The IPv4 address this one maps, if it is IPv4-mapped.
    public var mappedIPv4: IPv4Address? {
        isIPv4Mapped ? IPv4Address(UInt32(truncatingIfNeeded: low)) : nil
    }

    /// RFC 5952 text: lowercase, longest run (>= 2) of zero groups compressed, mapped
    /// addresses with a dotted-quad tail.
    public var description: String {
        if let v4 = mappedIPv4 { return "::ffff:\(v4)" }
        let groups: [UInt16] = (0..<4).map { UInt16(truncatingIfNeeded: high >> (48 - 16 * UInt64($0))) }
            + (0..<4).map { UInt16(truncatingIfNeeded: low >> (48 - 16 * UInt64($0))) }
        var bestStart = -1
        var bestLength = 1
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else { index += 1; continue }
            var end = index
            while end < 8 && groups[end] == 0 { end += 1 }
            if end - index > bestLength {
                bestStart = index
                bestLength = end - index
            }
            index = end
        }
        let hex = groups.map { String($0, radix: 16) }
        guard bestStart >= 0 else { return hex.joined(separator: ":") }
        let head = hex[0..<bestStart].joined(separator: ":")
        let tail = hex[(bestStart + bestLength)...].joined(separator: ":")
        return head + "::" + tail
    }
}
