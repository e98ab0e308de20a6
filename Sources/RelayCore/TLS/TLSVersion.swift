/// A TLS protocol version dynrelay can allow or refuse.
///
/// SSL 3.0 and older are never allowed and have no case: a hello that offers nothing newer
/// is refused as offering no allowed version.
public enum TLSVersion: UInt16, Sendable, CaseIterable, Comparable, CustomStringConvertible {
    case tls1_0 = 0x0301
    case tls1_1 = 0x0302
    case tls1_2 = 0x0303
    case tls1_3 = 0x0304

    /// The version named by its wire code, nil for SSL 3.0, GREASE and unknown codes.
    public init?(wire: UInt16) {
        self.init(rawValue: wire)
    }

    /// The wire code (`ProtocolVersion` in RFC 8446).
    public var wire: UInt16 { rawValue }

    /// `1.0` … `1.3`: how the config language and the version lists name it.
    public var number: String {
        switch self {
        case .tls1_0: return "1.0"
        case .tls1_1: return "1.1"
        case .tls1_2: return "1.2"
        case .tls1_3: return "1.3"
        }
    }

    /// `TLSv1.2`: how the audit trail's TLS version columns spell it, whether read from a
    /// tunnel's ServerHello or from the relay's own TLS (OpenSSL's `SSL_get_version` agrees,
    /// except that it says `TLSv1` for 1.0).
    public var auditName: String { "TLSv" + number }

    public var description: String { auditName }

    public static func < (lhs: TLSVersion, rhs: TLSVersion) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The TLS versions a listener, a tunnel or an upstream connection allows.
///
/// Written in the config as `1.2 1.3` (the global `tls-versions`) or `1.1,1.2` (a
/// `tls-versions=` option); the names clients of this infrastructure know are accepted too:
/// `GDEnableTLS1.1` adds 1.1 to the set it is combined with (the default when alone), and
/// `GDEnableTLS1.2` adds 1.1 and 1.2, as the client SDK's `GDControlTLSVersions` toggles do.
public struct TLSVersionSet: Sendable, Hashable, CustomStringConvertible {
    private var bits: UInt8

    /// `1.2 1.3`: what a deployment allows unless it says otherwise.
    public static let `default` = TLSVersionSet([.tls1_2, .tls1_3])

    /// The set of `versions`.
    public init(_ versions: some Sequence<TLSVersion>) {
        bits = 0
        for version in versions { insert(version) }
    }

    public var isEmpty: Bool { bits == 0 }

    public func contains(_ version: TLSVersion) -> Bool { bits & Self.bit(version) != 0 }

    public mutating func insert(_ version: TLSVersion) { bits |= Self.bit(version) }

    /// The versions in ascending order.
    public var versions: [TLSVersion] { TLSVersion.allCases.filter(contains) }

    /// The oldest and newest allowed, for `SSL_CTX_set_min/max_proto_version`; nil when empty.
    public var lowest: TLSVersion? { versions.first }
    public var highest: TLSVersion? { versions.last }

    /// True when the set allows a version below 1.2, which OpenSSL 3 refuses at its default
    /// security level: a context built for it runs at level 0 (and only such a context).
    public var allowsLegacy: Bool { contains(.tls1_0) || contains(.tls1_1) }

    /// `1.2 1.3`.
    public var description: String { versions.map(\.number).joined(separator: " ") }

    /// Parses a list of words (`1.2`, `1.3`, `GDEnableTLS1.1`, …). Explicit versions make
    /// up the set; the `GDEnable` names add to it, or to the default set when no version is
    /// named. Returns the offending word on failure, and fails on an empty list.
    public static func parse(_ words: [Substring]) -> Result<TLSVersionSet, TLSVersionListError> {
        guard !words.isEmpty else { return .failure(.empty) }
        var explicit = TLSVersionSet([])
        var added = TLSVersionSet([])
        var sawExplicit = false
        for word in words {
            switch word {
            case "1.0": explicit.insert(.tls1_0); sawExplicit = true
            case "1.1": explicit.insert(.tls1_1); sawExplicit = true
            case "1.2": explicit.insert(.tls1_2); sawExplicit = true
            case "1.3": explicit.insert(.tls1_3); sawExplicit = true
            case "GDEnableTLS1.1": added.insert(.tls1_1)
            case "GDEnableTLS1.2": added.insert(.tls1_1); added.insert(.tls1_2)
            default: return .failure(.unknown(String(word)))
            }
        }
        var set = sawExplicit ? explicit : TLSVersionSet.default
        set.bits |= added.bits
        return .success(set)
    }

    private static func bit(_ version: TLSVersion) -> UInt8 { 1 << (version.rawValue - 0x0301) }
}

/// Why a TLS version list did not parse.
public enum TLSVersionListError: Error, Equatable, Sendable, CustomStringConvertible {
    case empty
    case unknown(String)

    public var description: String {
        switch self {
        case .empty: return "an empty TLS version list (expected 1.0 1.1 1.2 1.3, GDEnableTLS1.1 or GDEnableTLS1.2)"
        case .unknown(let word): return "unknown TLS version '\(word)' (expected 1.0 1.1 1.2 1.3, GDEnableTLS1.1 or GDEnableTLS1.2)"
        }
    }
}
