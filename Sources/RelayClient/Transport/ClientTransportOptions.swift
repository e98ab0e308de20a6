/// The timeouts that bound every wait of a stream.
public struct ClientTransportOptions: Sendable, Hashable {
    /// From the start of a connect (name resolution included) until a connection is up,
    /// across every address tried.
    public var connectTimeout: Duration
    /// From the first TLS byte until the handshake is done.
    public var tlsHandshakeTimeout: Duration
    /// The longest a read or a write waits without progress.
    public var idleTimeout: Duration

    /// 10 s to connect, 10 s for a TLS handshake, 300 s of silence (the relay's own idle
    /// timeout, so a quiet tunnel is not given up sooner on this side).
    public init(connectTimeout: Duration = .seconds(10), tlsHandshakeTimeout: Duration = .seconds(10),
                idleTimeout: Duration = .seconds(300)) {
        self.connectTimeout = connectTimeout
        self.tlsHandshakeTimeout = tlsHandshakeTimeout
        self.idleTimeout = idleTimeout
    }
}
