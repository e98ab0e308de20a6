/// The relay's own endpoints: requests in origin form addressed to the relay itself, which
/// a proxy otherwise refuses (`not-a-proxy-request`). A client uses them to check that it
/// reaches the proxy infrastructure and to read its application configuration.
public enum WellKnownEndpoint: String, Sendable, CaseIterable {
    /// Liveness for clients choosing a relay: no proxy authentication.
    case status = "/.well-known/dynrelay/status"
    /// The servers the principal may reach: after proxy authentication, as a proxied request.
    case config = "/.well-known/dynrelay/config"

    /// The methods every endpoint answers; anything else is `405` with this list in `Allow`.
    public static let methods = ["GET", "HEAD"]

    /// The endpoint an origin-form target names, nil when it names none. The path must be
    /// exactly the endpoint's, byte for byte: nothing is decoded or normalised (`%2e`, `//`,
    /// `..`, a trailing slash or other case each name no endpoint), so there is one spelling
    /// to audit and no way to reach one endpoint through another's path. A query is ignored
    /// (clients add cache-busting parameters); its size is bounded by the head limit.
    public init?(target: String) {
        let path = target.firstIndex(of: "?").map { target[..<$0] } ?? target[...]
        guard let endpoint = WellKnownEndpoint(rawValue: String(path)) else { return nil }
        self = endpoint
    }

    /// The reason code of its audit row.
    public var reason: ReasonCode {
        switch self {
        case .status: return .relayStatus
        case .config: return .relayConfig
        }
    }
}
