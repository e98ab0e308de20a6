/// The `host:port` text of a destination, as audit rows, logs and listener names show it:
/// an IPv6 address in brackets, so the port cannot be read as part of it.
public enum Endpoint {
    /// `name:port`, `a.b.c.d:port` or `[v6]:port` (`Host` brackets an IPv6 literal itself).
    public static func text(_ host: Host, _ port: UInt16) -> String {
        "\(host):\(port)"
    }

    /// `a.b.c.d:port` or `[v6]:port`.
    public static func text(_ address: IPAddress, _ port: UInt16) -> String {
        switch address {
        case .v4: return "\(address):\(port)"
        case .v6: return "[\(address)]:\(port)"
        }
    }
}
