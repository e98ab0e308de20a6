/// One relay a client may use: where it listens and how preferred it is.
public struct RelayEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// `http://host:port/` (the plain listener) or `https://host:port/` (the HTTPS listener).
    public let url: ClientURL
    /// 1 is the most preferred; relays of equal priority share the load at random.
    public let priority: Int

    /// Creates an endpoint; `url` should have the target `/`.
    public init(url: ClientURL, priority: Int) {
        self.url = url
        self.priority = priority
    }

    /// `scheme://host:port;priority=N`, which `RelayList.parse` reads back.
    public var description: String { "\(url.scheme.rawValue)://\(url.authority);priority=\(priority)" }
}
