import RelayCore

/// Reaches one relay: TCP to its host and port, then TLS for an `https://` relay (its
/// HTTPS listener), verified against the relay's own host name or address. The one way
/// tunnels, the HTTP client and the relay's own endpoints connect to a relay, so they
/// agree on the host string, the trust and the timeouts.
///
/// Each step is bounded by `transport` (`connectTimeout`, then `tlsHandshakeTimeout`);
/// cancelling the calling task ends the step in progress. Errors are the transport's own
/// (`connection-refused`, `timeout`, `tls-cert-untrusted`…): each caller says what they
/// mean for a relay.
struct RelayConnector: Sendable {
    /// Trust, versions and verification for `https://` relays.
    let relayTLS: ClientTLSOptions
    /// Connect and handshake timeouts.
    let transport: ClientTransportOptions
    /// The loops the connection runs on.
    let runtime: RelayClientRuntime

    /// A connected stream to `relay`. `track` is told of each stream as soon as it exists
    /// (the TCP one, then the TLS one over it), so a caller that may be closed while
    /// connecting can end whatever is open by then.
    func connect(to relay: RelayEndpoint,
                 track: (any ClientByteStream) -> Void = { _ in }) async throws(RelayClientError) -> any ClientByteStream {
        // IPv6 without brackets: the form both the resolver and certificate checks take.
        let host = relay.url.cookieHost
        let tcp = try await TCPClientStream.connect(host: host, port: relay.url.port, options: transport, runtime: runtime)
        track(tcp)
        guard relay.url.scheme == .https else { return tcp }
        let tls = try await TLSClientStream.connect(over: tcp, host: host, port: relay.url.port, tls: relayTLS,
                                                    options: transport, runtime: runtime)
        track(tls)
        return tls
    }
}
