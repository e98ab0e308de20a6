import RelayCore

/// How a `RelayTunnel` reaches its app server: the relays to go through, the proxy
/// credentials, TLS to `https://` relays and, optionally, TLS end to end to the app server.
public struct RelayTunnelOptions: Sendable {
    /// The relays, shared with other tunnels so back-off is shared too.
    public var relays: RelaySelector
    /// What to answer a relay's `407` with; nil answers none (the `407` is `proxy-auth-failed`).
    public var proxyCredentials: ClientCredentials?
    /// TLS to a relay's HTTPS listener (`https://` relays): its CA, versions, verification.
    public var relayTLS: ClientTLSOptions
    /// TLS to the app server inside the tunnel, end to end; nil for a plain byte stream.
    /// The certificate must name the host given to `connect`.
    public var serverTLS: ClientTLSOptions?
    /// Connect, TLS handshake and idle timeouts of every connection.
    public var transport: ClientTransportOptions
    /// The longest wait for a relay's answer to one `CONNECT`.
    public var relayAnswerTimeout: Duration
    /// Most `CONNECT`s sent to one relay for one tunnel (a `407` and its answers): a relay
    /// that keeps challenging past them is looping.
    public var maxAuthRounds: Int
    /// The loops the connections run on.
    public var runtime: RelayClientRuntime

    /// Plain tunnels through `relays` without proxy credentials, 10 s for a relay's answer.
    public init(relays: RelaySelector, proxyCredentials: ClientCredentials? = nil,
                relayTLS: ClientTLSOptions = ClientTLSOptions(), serverTLS: ClientTLSOptions? = nil,
                transport: ClientTransportOptions = ClientTransportOptions(),
                relayAnswerTimeout: Duration = .seconds(10), maxAuthRounds: Int = 6,
                runtime: RelayClientRuntime = .shared) {
        self.relays = relays
        self.proxyCredentials = proxyCredentials
        self.relayTLS = relayTLS
        self.serverTLS = serverTLS
        self.transport = transport
        self.relayAnswerTimeout = relayAnswerTimeout
        self.maxAuthRounds = maxAuthRounds
        self.runtime = runtime
    }
}
