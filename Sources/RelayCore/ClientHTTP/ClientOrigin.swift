/// The (scheme, host, port) triple that decides whether credentials and cookies set for one
/// URL may travel to another (RFC 6454): equal origins only.
public struct ClientOrigin: Hashable, Sendable, CustomStringConvertible {
    /// `http` or `https`.
    public let scheme: ClientURL.Scheme
    /// The normalised host.
    public let host: Host
    /// The port, the scheme's default filled in, so `http://a` and `http://a:80` are one origin.
    public let port: UInt16

    /// Creates an origin from its parts.
    public init(scheme: ClientURL.Scheme, host: Host, port: UInt16) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// `scheme://host:port`, the port always written.
    public var description: String { "\(scheme.rawValue)://\(host):\(port)" }
}
