/// Resource bounds that keep one client from exhausting the relay.
public struct RelayLimits: Sendable, Equatable {
    /// Largest request head (request line + headers) in bytes.
    public var maxRequestHead: Int
    /// Most header fields in one head.
    public var maxHeaders: Int
    /// Most accepted client connections over all listeners.
    public var maxConnections: Int
    /// Most connections open at once from one source (an IPv4 address or an IPv6 /64), over
    /// all listeners: one address must not take every other client's place.
    public var maxConnectionsPerSource: Int
    /// Most audit rows waiting for their commit before new connections are refused: the
    /// queue's memory stays bounded when the disk stalls under a flood of connections.
    public var maxAuditBacklog: Int
    /// Most CONNECT tunnels one authenticated principal may have open at once.
    public var maxTunnelsPerPrincipal: Int

    /// The defaults from the contract unless overridden.
    public init(maxRequestHead: Int = 32768, maxHeaders: Int = 100, maxConnections: Int = 10000,
                maxConnectionsPerSource: Int = 1000, maxAuditBacklog: Int = 100_000,
                maxTunnelsPerPrincipal: Int = 1000) {
        self.maxRequestHead = maxRequestHead
        self.maxHeaders = maxHeaders
        self.maxConnections = maxConnections
        self.maxConnectionsPerSource = maxConnectionsPerSource
        self.maxAuditBacklog = maxAuditBacklog
        self.maxTunnelsPerPrincipal = maxTunnelsPerPrincipal
    }
}
