/// An HTTP/1.x protocol version as it appeared on the wire.
///
/// The parsers only ever produce 1.0 and 1.1; anything else is refused with
/// `ReasonCode.unsupportedVersion` before a head exists.
public struct HTTPVersion: Equatable, Hashable, Sendable, CustomStringConvertible {
    public var major: Int
    public var minor: Int

    /// Creates a version; callers outside the parsers use it to build heads in tests and rewrites.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// HTTP/1.0: connections close unless the peer asked for keep-alive.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1: connections persist unless a side says `Connection: close`.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    /// The wire spelling, e.g. `HTTP/1.1`.
    public var description: String { "HTTP/\(major).\(minor)" }
}
