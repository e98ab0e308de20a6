import RelayCore

/// How the client library speaks TLS to a server. Equal options share one OpenSSL context
/// (and its session cache) in a `RelayClientRuntime`.
public struct ClientTLSOptions: Sendable, Hashable {
    /// The versions allowed; `TLSVersionSet.parse` reads `1.2 1.3`, `GDEnableTLS1.1` and
    /// `GDEnableTLS1.2`.
    public var versions: TLSVersionSet
    /// PEM CAs to trust instead of the system trust store.
    public var caFile: String?
    /// Check the certificate chain and the host name (or address). Off only when asked.
    public var verify: Bool

    /// TLS 1.2 and 1.3, the system trust store, verification on.
    public init(versions: TLSVersionSet = .default, caFile: String? = nil, verify: Bool = true) {
        self.versions = versions
        self.caFile = caFile
        self.verify = verify
    }
}
