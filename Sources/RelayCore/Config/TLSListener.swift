/// An HTTPS proxy listener: `listen ADDR:PORT tls cert=FILE key=FILE …`. Clients speak TLS
/// to the relay and then everything a plain listener serves.
public struct TLSListener: Sendable, Equatable {
    /// The address and port bound.
    public var address: ListenAddress
    /// Certificate, key, client-certificate policy and versions (the global set unless the
    /// line names its own). File paths are absolute when the configuration file's were.
    public var tls: ListenerTLSConfig
    /// Where the line was written.
    public var location: SourceLocation

    /// Creates a TLS listener.
    public init(address: ListenAddress, tls: ListenerTLSConfig, location: SourceLocation) {
        self.address = address
        self.tls = tls
        self.location = location
    }
}
