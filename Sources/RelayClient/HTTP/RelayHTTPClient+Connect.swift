import RelayCore

extension RelayHTTPClient {
    /// Most `CONNECT` legs for one tunnel (NTLM takes two, Negotiate a few).
    static let maxConnectLegs = 6

    /// A pooled connection for `key` when one is still good, else a new one: to the relay
    /// (TLS when it is an `https://` relay), and for a tunnel `CONNECT` (answering `407`)
    /// then TLS to the origin. Returns whether the connection was reused.
    func connection(for key: HTTPPoolKey, url: ClientURL) async throws(HTTPAttemptFailure) -> (HTTPClientConnection, Bool) {
        if let pooled = pool.checkout(key) { return (pooled, true) }
        let relay = key.relay
        var stream = try await connectRelay(relay)
        guard case .tunnel(_, let origin) = key else {
            return (HTTPClientConnection(stream: stream, key: key), false)
        }
        stream = try await openTunnel(over: stream, relay: relay, to: url)
        guard origin.scheme == .https else { return (HTTPClientConnection(stream: stream, key: key), false) }
        do throws(RelayClientError) {
            let tls = try await TLSClientStream.connect(over: stream, host: url.cookieHost, port: url.port,
                                                        tls: configuration.tls, options: configuration.transport,
                                                        runtime: configuration.runtime)
            return (HTTPClientConnection(stream: tls, key: key), false)
        } catch {
            throw .final(.transport(error, "TLS with \(url.authority)"))
        }
    }

    private func connectRelay(_ relay: RelayEndpoint) async throws(HTTPAttemptFailure) -> any ClientByteStream {
        do throws(RelayClientError) {
            return try await RelayConnector(relayTLS: configuration.relayTLS, transport: configuration.transport,
                                            runtime: configuration.runtime).connect(to: relay)
        } catch {
            throw .relayConnect(error, relay: relay)
        }
    }

    /// `CONNECT` through `stream` (`ProxyConnectExchange`): the open tunnel, or the attempt's
    /// failure. Bytes after the `200` are refused: an HTTP origin does not speak before its
    /// client, so they can only be the relay's confusion.
    private func openTunnel(over first: any ClientByteStream, relay: RelayEndpoint,
                            to url: ClientURL) async throws(HTTPAttemptFailure) -> any ClientByteStream {
        let exchange = ProxyConnectExchange(host: url.cookieHost, port: url.port, relay: relay,
                                            credentials: configuration.proxyCredentials, maxLegs: Self.maxConnectLegs,
                                            answerTimeout: nil)
        let connector = RelayConnector(relayTLS: configuration.relayTLS, transport: configuration.transport,
                                       runtime: configuration.runtime)
        switch await exchange.run(on: first, reconnect: { () async throws(RelayClientError) in try await connector.connect(to: relay) }) {
        case .established(let stream, let leftover):
            guard leftover.isEmpty else {
                stream.close()
                throw HTTPAttemptFailure(error: RelayHTTPError(.badResponse, "the relay sent bytes after its 200 to CONNECT"),
                                         retry: .tunnelNotEstablished, relayAtFault: true)
            }
            return stream
        case .refused(let failure) where failure.status == 0:
            let error = failure.reason == "bad-response"
                ? RelayHTTPError(.badResponse, "the relay's answer to CONNECT is not HTTP")
                : RelayHTTPError(.transport, "the relay ended the CONNECT exchange (\(failure.reason))",
                                 transport: RelayClientError(.connectionReset, failure.reason))
            throw HTTPAttemptFailure(error: error, retry: .tunnelNotEstablished, relayAtFault: true)
        case .refused(let failure):
            throw HTTPAttemptFailure(error: RelayHTTPError(.relayRefused, "the relay refused the tunnel to \(exchange.authority)",
                                                           httpStatus: failure.status, reasonCode: failure.reason),
                                     retry: .tunnelNotEstablished, relayAtFault: failure.status == 503)
        case .authFailed(let failure, let why):
            throw .final(RelayHTTPError(.proxyAuthFailed, "the relay refused proxy authentication: \(why)",
                                        httpStatus: 407, reasonCode: failure?.reason))
        case .unproven(let error):
            // Not another relay: nothing is wrong with the request, and this one is suspect.
            throw HTTPAttemptFailure(error: RelayHTTPError(.mutualAuthFailed, "the relay did not prove its identity (\(error))",
                                                           httpStatus: 200),
                                     retry: nil, relayAtFault: true)
        case .broken(let error) where error.isLocalEnd:
            throw .final(.transport(error, "CONNECT \(exchange.authority) through relay \(relay)"))
        case .broken(let error):
            throw HTTPAttemptFailure(error: RelayHTTPError(.transport, "the relay ended the CONNECT exchange (\(error.code.name))",
                                                           transport: error),
                                     retry: .tunnelNotEstablished, relayAtFault: true)
        case .reconnectFailed(let error):
            throw .relayConnect(error, relay: relay)
        }
    }
}
