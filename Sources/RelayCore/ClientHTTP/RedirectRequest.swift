/// The parts of a request that following a redirect changes: method, URL, headers, and
/// whether there is a body and if it can be sent again.
public struct RedirectRequest: Hashable, Sendable {
    /// The method, as sent (`GET`, `POST`, ...).
    public var method: String
    /// The URL requested.
    public var url: ClientURL
    /// The header fields the caller set; the client adds framing and `Host` itself.
    public var headers: HTTPHeaders
    /// The body's kind.
    public var body: RequestBodyKind
    /// Header names, besides `Authorization` and `Cookie`, that carry a credential for this
    /// origin only (an API key header, say); compared case-insensitively.
    public var originBoundHeaders: [String]

    /// Creates a request description.
    public init(method: String, url: ClientURL, headers: HTTPHeaders = HTTPHeaders(), body: RequestBodyKind = .none,
                originBoundHeaders: [String] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.originBoundHeaders = originBoundHeaders
    }
}
