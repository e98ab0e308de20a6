/// A parsed status line and header section; the body, if any, follows on the wire.
public struct HTTPResponseHead: Equatable, Sendable {
    public var version: HTTPVersion
    public var status: Int
    /// The reason phrase as received; may be empty (`HTTP/1.1 200\r\n` is accepted).
    public var reason: String
    public var headers: HTTPHeaders

    /// Creates a response head (the parser builds these; tests and servers build their own).
    public init(version: HTTPVersion = .http1_1, status: Int, reason: String, headers: HTTPHeaders = HTTPHeaders()) {
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers
    }
}
