/// A parsed request line and header section; the body, if any, follows on the wire.
public struct HTTPRequestHead: Equatable, Sendable {
    public var method: String
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders

    /// Creates a request head (the parser builds these; tests and clients build their own).
    public init(method: String, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = HTTPHeaders()) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }
}
