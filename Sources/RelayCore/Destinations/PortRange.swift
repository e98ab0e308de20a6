/// An inclusive range of TCP ports a rule applies to.
public struct PortRange: Hashable, Sendable, CustomStringConvertible {
    /// Lowest port, inclusive.
    public let lo: UInt16
    /// Highest port, inclusive.
    public let hi: UInt16

    /// Every port (0 included, so a port-less `deny` also covers nonsense requests).
    public static let all = PortRange(uncheckedLo: 0, hi: .max)

    /// A range; nil when `lo > hi`.
    public init?(lo: UInt16, hi: UInt16) {
        guard lo <= hi else { return nil }
        self.init(uncheckedLo: lo, hi: hi)
    }

    /// Exactly one port.
    public init(_ port: UInt16) {
        self.init(uncheckedLo: port, hi: port)
    }

    private init(uncheckedLo lo: UInt16, hi: UInt16) {
        self.lo = lo
        self.hi = hi
    }

    /// True when `port` lies in `lo...hi`.
    public func contains(_ port: UInt16) -> Bool {
        lo <= port && port <= hi
    }

    /// Config syntax: `443`, `8080-8089`, `*`.
    public var description: String {
        if self == .all { return "*" }
        return lo == hi ? "\(lo)" : "\(lo)-\(hi)"
    }
}
