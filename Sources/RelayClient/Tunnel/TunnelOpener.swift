import RelayCore

/// Opens one tunnel: picks relays as `RelaySelector` says, connects (TLS to `https://`
/// relays), sends `CONNECT`, answers `407`s through a `ClientAuthSession`, and fails over
/// to another relay only when the tunnel cannot have reached the app server: the relay
/// was unreachable, timed out, answered `503`, or broke before answering. A `403`, `502`
/// or `504` is the relay's verdict on the destination, the same on every relay, so it is
/// the tunnel's answer. Nothing is sent through a tunnel before it opens, so failing over
/// never sends the app's bytes twice.
struct TunnelOpener {
    let host: String
    let port: UInt16
    let options: RelayTunnelOptions
    /// Told of each connection as it is made, so a `close` while connecting can end it.
    let track: @Sendable (any ClientByteStream) -> Void

    /// What one relay did with the attempt.
    private enum Attempt {
        case opened(any ClientByteStream)
        /// The relay failed before the tunnel opened: another relay may be tried if
        /// `RetryDecision` agrees that nothing reached the app server; this one goes into back-off.
        case failover(RelayClientError, RetryDecision.Failure)
        /// The answer for this tunnel, whichever relay is asked.
        case final(RelayClientError)
    }

    private var bareHost: String { host.trimmingBrackets }

    /// The open tunnel's stream (TLS inside it when `serverTLS` is set) and the relay used.
    func open() async throws(RelayClientError) -> (stream: any ClientByteStream, relay: RelayEndpoint) {
        var tried: Set<RelayEndpoint> = []
        var lastError: RelayClientError?
        while let relay = options.relays.select(excluding: tried) {
            tried.insert(relay)
            if Task.isCancelled { throw RelayClientError.cancelledTask }
            switch await attempt(relay) {
            case .opened(let tunnel):
                options.relays.recordSuccess(relay)
                return (try await endToEndTLS(over: tunnel), relay)
            case .failover(let error, let failure):
                options.relays.recordFailure(relay)
                // A CONNECT carries no body and nothing of the app's goes out before the
                // 200, so every such failure qualifies; the rule stays in one place.
                guard RetryDecision(failure: failure, method: "CONNECT", body: .none).mayResend else { throw error }
                lastError = error
            case .final(let error) where error.code == .mutualAuthFailed:
                // It could not prove who it is: not a relay to use for a while. Not failed
                // over either: the credentials have proven nothing wrong with the tunnel.
                options.relays.recordFailure(relay)
                throw error
            case .final(let error):
                // The relay answered as a relay should: it is healthy, whatever it said.
                if error.code != .cancelled && error.code != .closed { options.relays.recordSuccess(relay) }
                throw error
            }
        }
        throw lastError ?? RelayClientError(.relayUnreachable, "no relay to try")
    }

    private func endToEndTLS(over tunnel: any ClientByteStream) async throws(RelayClientError) -> any ClientByteStream {
        guard let tls = options.serverTLS else { return tunnel }
        return try await TLSClientStream.connect(over: tunnel, host: bareHost, port: port, tls: tls,
                                                 options: options.transport, runtime: options.runtime)
    }

    private func attempt(_ relay: RelayEndpoint) async -> Attempt {
        let stream: any ClientByteStream
        do throws(RelayClientError) {
            stream = try await connect(to: relay)
        } catch {
            return Self.classifyConnectFailure(error, relay: relay)
        }
        let exchange = ProxyConnectExchange(host: bareHost, port: port, relay: relay, credentials: options.proxyCredentials,
                                            maxLegs: options.maxAuthRounds, answerTimeout: options.relayAnswerTimeout)
        switch await exchange.run(on: stream, reconnect: { () async throws(RelayClientError) in try await connect(to: relay) }) {
        case .established(let tunnel, let leftover):
            return .opened(leftover.isEmpty ? tunnel : PrefixedByteStream(inner: tunnel, prefix: leftover))
        case .refused(let failure):
            return Self.classifyRefusal(failure, relay: relay)
        case .authFailed(let failure?, let why):
            return .final(RelayClientError(.proxyAuthFailed, "relay \(relay.url.origin) refused proxy authentication: \(why)",
                                           httpStatus: failure.status, reasonCode: failure.reason))
        case .authFailed(nil, _):
            return .final(RelayClientError(.proxyAuthFailed, "relay \(relay.url.origin) kept asking for proxy authentication",
                                           httpStatus: 407, reasonCode: nil))
        case .unproven(let error):
            return .final(RelayClientError(.mutualAuthFailed, "relay \(relay.url.origin) did not prove its identity: \(error)",
                                           httpStatus: 200))
        case .broken(let error):
            return Self.classifyHandshakeFailure(error, relay: relay)
        case .reconnectFailed(let error):
            return Self.classifyConnectFailure(error, relay: relay)
        }
    }

    private func connect(to relay: RelayEndpoint) async throws(RelayClientError) -> any ClientByteStream {
        try await RelayConnector(relayTLS: options.relayTLS, transport: options.transport, runtime: options.runtime)
            .connect(to: relay, track: track)
    }

    private static func classifyConnectFailure(_ error: RelayClientError, relay: RelayEndpoint) -> Attempt {
        if error.code == .cancelled || error.code == .closed { return .final(error) }
        // A TLS failure keeps its own code (an untrusted relay certificate is worth naming).
        let isTLS = error.tlsDetail != nil || error.code == .tlsConfiguration
        let code: RelayClientError.Code = error.code == .timeout ? .relayTimeout : isTLS ? error.code : .relayUnreachable
        return .failover(RelayClientError(code, "relay \(relay.url.origin): \(error.message)", errno: error.errno,
                                          tlsDetail: error.tlsDetail),
                         error.code == .timeout ? .relayConnectTimedOut : .relayConnectFailed)
    }

    private static func classifyHandshakeFailure(_ error: RelayClientError, relay: RelayEndpoint) -> Attempt {
        if error.code == .cancelled || error.code == .closed { return .final(error) }
        let code: RelayClientError.Code = error.code == .timeout ? .relayTimeout : .relayUnreachable
        return .failover(RelayClientError(code, "relay \(relay.url.origin): \(error.message)", errno: error.errno),
                         .tunnelNotEstablished)
    }

    private static func classifyRefusal(_ failure: ProxyConnectHandshake.Failure, relay: RelayEndpoint) -> Attempt {
        let origin = relay.url.origin
        switch failure.status {
        case 0 where failure.reason == "closed-early":
            return .failover(RelayClientError(.relayUnreachable, "relay \(origin) closed the connection before answering",
                                              reasonCode: failure.reason), .tunnelNotEstablished)
        case 0:
            return .failover(RelayClientError(.relayBadResponse, "relay \(origin) did not answer like an HTTP proxy",
                                              reasonCode: failure.reason), .tunnelNotEstablished)
        case 503:
            return .failover(.relayRefused(status: 503, reasonCode: failure.reason, "relay \(origin) is overloaded"),
                             .relayRefused(status: 503))
        default:
            return .final(.relayRefused(status: failure.status, reasonCode: failure.reason,
                                        "relay \(origin) refused the tunnel"))
        }
    }
}

extension String {
    /// An IPv6 literal without its brackets; anything else as it is.
    fileprivate var trimmingBrackets: String {
        hasPrefix("[") && hasSuffix("]") ? String(dropFirst().dropLast()) : self
    }
}
