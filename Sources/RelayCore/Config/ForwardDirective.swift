/// `forward LISTEN_ADDR:PORT to HOST:PORT`: a static plain-TCP forward to one registered server.
public struct ForwardDirective: Sendable, Equatable {
    /// Where the forward accepts connections.
    public var listen: ListenAddress
    /// The target host (resolved at connect time like any request host).
    public var host: Host
    /// The target port.
    public var port: UInt16
    /// Where the directive was written.
    public var location: SourceLocation

    /// Creates a forward.
    public init(listen: ListenAddress, host: Host, port: UInt16, location: SourceLocation) {
        self.listen = listen
        self.host = host
        self.port = port
        self.location = location
    }
}
