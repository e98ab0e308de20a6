/// An address:port the relay binds.
public struct ListenAddress: Hashable, Sendable, CustomStringConvertible {
    /// The local address (an IP literal: listeners never resolve names).
    public var host: IPAddress
    /// The port; 0 means ephemeral (tests read the bound port from the ready line).
    public var port: UInt16

    /// Creates a listen address.
    public init(host: IPAddress, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// `127.0.0.1:3128` or `[::1]:3128`.
    public var description: String {
        switch host {
        case .v4(let a): return "\(a):\(port)"
        case .v6(let a): return "[\(a)]:\(port)"
        }
    }
}
