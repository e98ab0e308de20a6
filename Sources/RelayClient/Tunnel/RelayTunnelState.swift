/// Where a `RelayTunnel` is in its life. A tunnel goes
/// `disconnected → connecting → open → closing → closed`, or ends in `failed` from any
/// state but `closed`; it never goes back.
public enum RelayTunnelState: Sendable, Equatable, CustomStringConvertible {
    /// Made, `connect` not called yet.
    case disconnected
    /// Choosing a relay, connecting, authenticating, opening the tunnel (and TLS inside it).
    case connecting
    /// Bytes flow both ways.
    case open
    /// `close` was called and is releasing the connection.
    case closing
    /// Closed by this side.
    case closed
    /// The tunnel could not open, or broke while open; the error says why.
    case failed(RelayClientError)

    /// `open`, `failed(relay-refused)`, ...
    public var description: String {
        switch self {
        case .disconnected: "disconnected"
        case .connecting: "connecting"
        case .open: "open"
        case .closing: "closing"
        case .closed: "closed"
        case .failed(let error): "failed(\(error.code))"
        }
    }

    /// Closed or failed: nothing more happens on this tunnel.
    public var isFinal: Bool {
        switch self {
        case .closed, .failed: true
        default: false
        }
    }
}
