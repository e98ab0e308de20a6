extension ProxySession {
    /// What a request asks of the relay: a tunnel (CONNECT), or one request forwarded.
    enum Kind {
        case tunnel
        /// `maxForwards`: the received count of a TRACE or OPTIONS (RFC 9110 7.6.2), nil otherwise.
        case forward(pathAndQuery: String, hostHeader: String, framing: BodyFraming, maxForwards: UInt64?)
    }

    /// A request that parsed, waiting for its principal before the registry (or the relay's
    /// own endpoint) sees it.
    struct PendingRequest {
        var head: HTTPRequestHead
        var addressee: Addressee
        var target: String
        var startedAt: UInt64
    }

    /// Whom a request is for.
    enum Addressee {
        /// A destination the registry decides on. `httpsScheme`: an `https://` request, for
        /// which the relay speaks TLS to its upstream.
        case upstream(Kind, host: Host, port: UInt16, httpsScheme: Bool)
        /// One of the relay's own endpoints; `framing`: its request body, left unread.
        case relay(WellKnownEndpoint, framing: BodyFraming)
    }

    /// A request that passed parsing, authentication and the registry, on its way to an upstream.
    struct Request {
        var head: HTTPRequestHead
        var kind: Kind
        var host: Host
        var port: UInt16
        var target: String
        var rule: String
        var resolved: String?
        var startedAt: UInt64
        /// Sent on an upstream connection kept alive from an earlier request.
        var onReusedLink = false
        var principal: AuthPrincipal?
        /// Negotiate's mutual-authentication token, returned on the `200` of a CONNECT.
        var mutualAuth: String?
        /// The relay speaks TLS to the upstream (an `https://` request, or a rule marked `tls`).
        var upstreamTLS = false

        /// A TRACE or OPTIONS whose hop count is used up: its final recipient is the relay.
        var isAnsweredByRelay: Bool {
            if case .forward(_, _, _, maxForwards: 0?) = kind { return true }
            return false
        }
    }
}
