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
        /// The relay speaks TLS on it: only a request that wants TLS reuses it, and only such.
        var tls: Bool
    }
}
