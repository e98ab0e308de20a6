import RelayCore

/// How a `RelayHTTPClient` reaches servers: through which relays, with which credentials,
/// TLS options, timeouts, redirect and cookie handling, and how long idle connections live.
public struct RelayHTTPClientConfiguration: Sendable {
    /// The relays and their health. Hand the same selector to tunnels (`RelayTunnelOptions`)
    /// and other clients, so a relay one of them found down is avoided by all, for its back-off.
    public var selector: RelaySelector
    /// The relays, in the priority order `RelaySelection` picks from; setting them starts a
    /// new selector, every relay healthy.
    public var relays: [RelayEndpoint] {
        get { selector.relays }
        set { selector = RelaySelector(newValue) }
    }
    /// Credentials for a relay's `407`; nil answers no challenge.
    public var proxyCredentials: ClientCredentials?
    /// Credentials for a server's `401`, used at the request's own origin only; nil answers none.
    public var serverCredentials: ClientCredentials?
    /// TLS to `https://` servers, end to end inside the tunnel.
    public var tls: ClientTLSOptions
    /// TLS to `https://` relays (the relay's HTTPS listener).
    public var relayTLS: ClientTLSOptions
    /// Timeouts of every connect, handshake, read and write.
    public var transport: ClientTransportOptions
    /// Which redirects are followed; nil returns every 3xx to the caller.
    public var redirects: RedirectPolicy?
    /// Whether cookies are stored and sent.
    public var cookies: Bool
    /// A Netscape-format cookie file loaded at start and rewritten when the jar changes.
    public var cookieFile: String?
    /// How long a kept-alive connection may idle before it is closed instead of reused.
    public var maxIdle: Duration
    /// Most idle connections kept per relay, or per origin through a relay.
    public var maxIdlePerKey: Int
    /// Most bytes of a `401`/`407`/`3xx` body read to keep its connection; a longer one
    /// closes the connection instead.
    public var maxDrainBytes: Int
    /// Where the I/O runs.
    public var runtime: RelayClientRuntime

    /// A configuration for `relays` with the defaults: verification on, 10 redirects, cookies
    /// in memory, 30 s idle connections, 8 per key.
    public init(relays: [RelayEndpoint], proxyCredentials: ClientCredentials? = nil,
                serverCredentials: ClientCredentials? = nil, tls: ClientTLSOptions = ClientTLSOptions(),
                relayTLS: ClientTLSOptions = ClientTLSOptions(), transport: ClientTransportOptions = ClientTransportOptions(),
                redirects: RedirectPolicy? = RedirectPolicy(), cookies: Bool = true, cookieFile: String? = nil,
                maxIdle: Duration = .seconds(30), maxIdlePerKey: Int = 8, maxDrainBytes: Int = 1 << 20,
                runtime: RelayClientRuntime = .shared) {
        self.init(relays: RelaySelector(relays), proxyCredentials: proxyCredentials, serverCredentials: serverCredentials,
                  tls: tls, relayTLS: relayTLS, transport: transport, redirects: redirects, cookies: cookies,
                  cookieFile: cookieFile, maxIdle: maxIdle, maxIdlePerKey: maxIdlePerKey, maxDrainBytes: maxDrainBytes,
                  runtime: runtime)
    }

    /// A configuration picking relays through `relays`, a selector shared with tunnels or
    /// other clients (their failures put a relay in back-off for this client too), with the
    /// same defaults.
    public init(relays: RelaySelector, proxyCredentials: ClientCredentials? = nil,
                serverCredentials: ClientCredentials? = nil, tls: ClientTLSOptions = ClientTLSOptions(),
                relayTLS: ClientTLSOptions = ClientTLSOptions(), transport: ClientTransportOptions = ClientTransportOptions(),
                redirects: RedirectPolicy? = RedirectPolicy(), cookies: Bool = true, cookieFile: String? = nil,
                maxIdle: Duration = .seconds(30), maxIdlePerKey: Int = 8, maxDrainBytes: Int = 1 << 20,
                runtime: RelayClientRuntime = .shared) {
        self.selector = relays
        self.proxyCredentials = proxyCredentials
        self.serverCredentials = serverCredentials
        self.tls = tls
        self.relayTLS = relayTLS
        self.transport = transport
        self.redirects = redirects
        self.cookies = cookies
        self.cookieFile = cookieFile
        self.maxIdle = maxIdle
        self.maxIdlePerKey = maxIdlePerKey
        self.maxDrainBytes = maxDrainBytes
        self.runtime = runtime
    }
}

/// One request for `RelayHTTPClient.execute`.
public struct RelayHTTPClientRequest: Sendable {
    /// The method, e.g. `GET`.
    public var method: String
    /// Where to.
    public var url: ClientURL
    /// Header fields; framing, `Host` and proxy fields are the client's and are dropped.
    public var headers: HTTPHeaders
    /// The body.
    public var body: RelayHTTPBody
    /// Server credentials for this request instead of the configuration's.
    public var serverCredentials: ClientCredentials?
    /// Header names, besides `Authorization` and `Cookie`, never sent to another origin.
    public var originBoundHeaders: [String]

    /// A request.
    public init(method: String = "GET", url: ClientURL, headers: HTTPHeaders = HTTPHeaders(),
                body: RelayHTTPBody = .empty, serverCredentials: ClientCredentials? = nil,
                originBoundHeaders: [String] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.serverCredentials = serverCredentials
        self.originBoundHeaders = originBoundHeaders
    }
}
