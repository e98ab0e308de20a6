import RelayCore

/// Which requests may share a kept-alive connection: absolute-form requests share any
/// connection to the same relay, a tunnel carries requests to its one origin only.
enum HTTPPoolKey: Hashable, Sendable {
    case relay(RelayEndpoint)
    case tunnel(RelayEndpoint, ClientOrigin)

    var relay: RelayEndpoint {
        switch self {
        case .relay(let relay), .tunnel(let relay, _): relay
        }
    }
}
