import COpenSSL

/// The TLS versions a context allows, by wire code (0x0301 for TLS 1.0 … 0x0304 for 1.3).
/// RelayIO does not see the configuration's `TLSVersionSet`; RelayServer hands its wire
/// codes over (`TLSContext+Versions.swift` there).
public struct TLSProtocols: Sendable, Equatable, CustomStringConvertible {
    /// The allowed wire codes, ascending; only TLS 1.0 to 1.3 are kept.
    public let wireVersions: [UInt16]

    /// TLS 1.2 and 1.3.
    public static let modern = TLSProtocols(wire: [0x0303, 0x0304])
    /// Every version from 1.0 to 1.3.
    public static let all = TLSProtocols(wire: [0x0301, 0x0302, 0x0303, 0x0304])

    /// The versions among `wire` that are TLS 1.0 to 1.3.
    public init(wire: some Sequence<UInt16>) {
        wireVersions = Set(wire.filter { (0x0301...0x0304).contains($0) }).sorted()
    }

    /// True when a version below 1.2 is allowed, which OpenSSL 3 refuses at its default
    /// security level: a context allowing one runs at level 0 (and only such a context).
    public var allowsLegacy: Bool { wireVersions.first.map { $0 < 0x0303 } ?? false }

    /// `TLSv1.2 TLSv1.3`.
    public var description: String {
        wireVersions.map { "TLSv1.\(Int($0) - 0x0301)" }.joined(separator: " ")
    }

    /// Applies the set to `context`: min and max always (Debian's openssl.cnf may set a
    /// MinProtocol of its own), a gap inside them as SSL_OP_NO_*, and for legacy versions
    /// security level 0 with the matching cipher list, on this context alone.
    func apply(to context: OpaquePointer) throws(TLSSetupError) {
        guard let lowest = wireVersions.first, let highest = wireVersions.last else {
            throw TLSSetupError(.versions, "no TLS version allowed")
        }
        guard crelay_SSL_CTX_set_min_proto_version(context, Int32(lowest)) == 1,
              crelay_SSL_CTX_set_max_proto_version(context, Int32(highest)) == 1 else {
            throw TLSSetupError(.versions, "cannot set TLS versions \(self)")
        }
        var excluded: UInt64 = 0
        for version in lowest...highest where !wireVersions.contains(version) {
            excluded |= crelay_SSL_OP_NO_version(Int32(version))
        }
        if excluded != 0 { SSL_CTX_set_options(context, excluded) }
        if allowsLegacy {
            SSL_CTX_set_security_level(context, 0)
            guard SSL_CTX_set_cipher_list(context, "DEFAULT@SECLEVEL=0") == 1 else {
                throw TLSSetupError(.versions, "cannot set the legacy cipher list for \(self)")
            }
        }
    }
}
