/// Bounds on one message head, so a peer cannot make the relay buffer or index without end.
/// The same bounds apply to a chunked body's trailer section.
public struct HTTPHeadLimits: Sendable, Equatable {
    /// Largest head accepted, counting the optional leading CRLF and the final CRLFCRLF.
    public var maxHeadBytes: Int = 32768
    /// Most header field lines accepted (the start line is not counted).
    public var maxHeaders: Int = 100

    /// Creates limits; the defaults match the config defaults (`max-request-head`, `max-headers`).
    public init(maxHeadBytes: Int = 32768, maxHeaders: Int = 100) {
        self.maxHeadBytes = maxHeadBytes
        self.maxHeaders = maxHeaders
    }
}
