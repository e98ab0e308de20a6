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

    /// `CONNECT` through `stream`, answering the relay's `407` on the same connection while
    /// it stays open (NTLM needs that), on a new one otherwise.
    private func openTunnel(over first: any ClientByteStream, relay: RelayEndpoint,
                            to url: ClientURL) async throws(HTTPAttemptFailure) -> any ClientByteStream {
        var stream = first
        var session = configuration.proxyCredentials.map {
            ClientAuthSession(credentials: $0, host: relay.url.cookieHost, peer: .proxy)
        }
        let authority = url.authority.contains(":") ? url.authority : "\(url.authority):\(url.port)"
        var answer: String?
        for _ in 0..<Self.maxConnectLegs {
            var handshake = ProxyConnectHandshake(host: url.cookieHost, port: url.port,
                                                  extraHeaders: answer.map { [("Proxy-Authorization", $0)] } ?? [])
            let failure: ConnectRefusal
            switch await run(&handshake, on: stream) {
            case .success(let (leftover, established)):
                guard leftover.isEmpty else {
                    stream.close()
                    throw HTTPAttemptFailure(error: RelayHTTPError(.badResponse, "the relay sent bytes after its 200 to CONNECT"),
                                             retry: .tunnelNotEstablished, relayAtFault: true)
                }
                do throws(ClientAuthError) {
                    if answer != nil { try session?.accepted(AuthChallenge.parse(headerValues: established)) }
                } catch {
                    stream.close()
                    // Not another relay: nothing is wrong with the request, and this one is suspect.
                    throw HTTPAttemptFailure(error: RelayHTTPError(.mutualAuthFailed, "the relay did not prove its identity (\(error))",
                                                                   httpStatus: 200),
                                             retry: nil, relayAtFault: true)
                }
                return stream
            case .failure(let refused):
                failure = refused
            }
            guard failure.status == 407 else {
                stream.close()
                if failure.status == 0 {
                    let error = failure.reason == "bad-response"
                        ? RelayHTTPError(.badResponse, "the relay's answer to CONNECT is not HTTP")
                        : RelayHTTPError(.transport, "the relay ended the CONNECT exchange (\(failure.reason))",
                                         transport: failure.transport ?? RelayClientError(.connectionReset, failure.reason))
                    throw HTTPAttemptFailure(error: error, retry: .tunnelNotEstablished, relayAtFault: true)
                }
                throw HTTPAttemptFailure(error: RelayHTTPError(.relayRefused, "the relay refused the tunnel to \(authority)",
                                                               httpStatus: failure.status, reasonCode: failure.reason),
                                         retry: .tunnelNotEstablished, relayAtFault: failure.status == 503)
            }
            guard var current = session else {
                stream.close()
                throw .final(RelayHTTPError(.proxyAuthFailed, "the relay asks for credentials and none are configured",
                                            httpStatus: 407, reasonCode: failure.reason))
            }
            do throws(ClientAuthError) {
                answer = try current.answer(headerValues: failure.challenges, method: "CONNECT", target: authority)
            } catch {
                stream.close()
                throw .final(RelayHTTPError(.proxyAuthFailed, "the relay refused the credentials (\(error))",
                                            httpStatus: 407, reasonCode: failure.reason))
            }
            session = current
            guard answer != nil else {
                stream.close()
                throw .final(RelayHTTPError(.proxyAuthFailed, "the relay answered 407 without a challenge", httpStatus: 407))
            }
            // Connection-bound schemes must answer on the connection that was challenged;
            // the others start afresh, since a refusal may close its connection.
            if failure.closed || !(current.scheme == .ntlm || current.scheme == .negotiate) {
                stream.close()
                stream = try await connectRelay(relay)
            }
        }
        stream.close()
        throw .final(RelayHTTPError(.proxyAuthFailed, "the relay kept asking for credentials", httpStatus: 407))
    }

    /// One `CONNECT` exchange: the tunnel's first bytes and the `Proxy-Authenticate` values
    /// of its 2xx, or the refusal (`closed` when the relay ended the connection with it).
    private func run(_ handshake: inout ProxyConnectHandshake,
                     on stream: any ClientByteStream) async -> Result<([UInt8], [String]), ConnectRefusal> {
        do throws(RelayClientError) {
            try await stream.write(handshake.start())
            while true {
                let bytes = try await stream.read(maxBytes: HTTPResponseReader.readSize)
                if bytes.isEmpty {
                    let failure = handshake.receiveEOF()
                    return .failure(ConnectRefusal(status: failure.status, reason: failure.reason,
                                                   challenges: failure.challenges, closed: true, transport: nil))
                }
                switch handshake.receive(bytes) {
                case .needMore: continue
                case .established(let leftover): return .success((leftover, handshake.establishedChallenges))
                case .failed(let failure):
                    return .failure(ConnectRefusal(status: failure.status, reason: failure.reason,
                                                   challenges: failure.challenges, closed: false, transport: nil))
                }
            }
        } catch {
            return .failure(ConnectRefusal(status: 0, reason: error.code.name, challenges: [], closed: true, transport: error))
        }
    }
}

/// A relay's refusal of `CONNECT`, and whether it closed the connection with it.
struct ConnectRefusal: Error {
    let status: Int
    let reason: String
    let challenges: [String]
    let closed: Bool
    let transport: RelayClientError?
}
