/// How the end of a message body is found on the wire (RFC 9112 6.3).
public enum BodyFraming: Equatable, Sendable {
    /// No body: the next byte belongs to the next message.
    case none
    /// Exactly this many bytes.
    case contentLength(UInt64)
    /// `Transfer-Encoding: chunked`, ending with the last chunk and trailer section.
    case chunked
    /// Everything until the upstream closes (responses only); the connection cannot be reused.
    case untilClose
}
