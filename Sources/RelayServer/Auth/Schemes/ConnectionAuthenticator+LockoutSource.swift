import RelayCore
import RelayIO

extension ConnectionAuthenticator {
    /// What lockouts count failures against for a client at `address`: its IPv4 address,
    /// or its IPv6 /64 (`2001:db8:1:2::/64`). One host commonly holds a whole /64, and
    /// counting single IPv6 addresses would give it a fresh allowance of guesses per address.
    static func lockoutSource(of address: String) -> String {
        let host = host(of: address)
        // The same notion of a source as the connection limits count (`ClientSource`).
        guard let peer = SocketAddress(ip: host, port: 0) else { return host }
        return ClientSource(peer).description
    }

    /// `1.2.3.4:5678` → `1.2.3.4`; `[::1]:5678` → `::1`.
    /// `address` without its `:port` and an IPv6 literal without its brackets. Scans the
    /// UTF-8 bytes: it runs once per connection, and `Character` scanning cost most of a
    /// microsecond.
    static func host(of address: String) -> String {
        let utf8 = address.utf8
        guard let colon = utf8.lastIndex(of: UInt8(ascii: ":")) else { return address }
        var start = utf8.startIndex
        var end = colon
        if colon > start, utf8[start] == UInt8(ascii: "["), utf8[utf8.index(before: colon)] == UInt8(ascii: "]") {
            start = utf8.index(after: start)
            end = utf8.index(before: colon)
        }
        return String(address[start..<max(start, end)])
    }
}
