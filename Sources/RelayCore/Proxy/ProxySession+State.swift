extension ProxySession {
    /// Where the connection is in its request cycle; each phase holds what it needs.
    enum State {
        case readingHead
        /// The driver is checking credentials; client reads are paused.
        case authenticating(PendingRequest)
        /// The upstream is being opened (resolve, connect, the open row's commit) by the
        /// shared `UpstreamOpening`. A request sent on a kept-alive link, or one the relay
        /// answers itself, waits here for its open row only. The connection lost while the
        /// open row's commit is pending stays here, its sockets closed, until that commit
        /// answers and settles the record.
        case opening(Request, UpstreamOpening)
        case forwarding(Exchange)
        case tunnelled
        case closed
    }

    /// An upstream connection kept open between requests of this client connection only,
    /// with what a later request must match to reuse it.
    struct UpstreamLink {
        var host: Host
        var port: UInt16
        var resolved: String
        /// The address connected to, checked again on reuse: a reload may deny it since.
        var address: IPAddress?
        /// Whom it was opened for: an origin may have authenticated the connection itself
        /// (NTLM to IIS), so another principal on this client connection gets a fresh one.
        var principal: AuthPrincipal?
        /// The terms the relay's own TLS on it was set up with, nil for plain TCP: only a
        /// request wanting TLS under the same terms reuses it, so a reload that changes the
        /// rule's `ca=`, `verify=` or `tls-versions=` gets a new link.
        var tls: UpstreamTLSTerms?
    }

    /// What the relay's TLS to an upstream is set up from: the rule's upstream policy and
    /// the versions the rule allows.
    struct UpstreamTLSTerms: Equatable {
        var policy: UpstreamTLSPolicy
        var versions: TLSVersionSet

        /// The terms of `request`'s rule in `registry`, nil when the request is plain or
        /// its rule is gone.
        static func of(_ request: borrowing Request, in registry: Registry) -> UpstreamTLSTerms? {
            guard request.upstreamTLS, let rule = registry.rule(named: request.rule) else { return nil }
            return UpstreamTLSTerms(policy: rule.upstreamTLS, versions: rule.tunnelTLS.versions)
        }
    }
}
