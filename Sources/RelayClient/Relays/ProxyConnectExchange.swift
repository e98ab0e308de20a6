import RelayCore

/// The whole `CONNECT` exchange with one relay, for tunnels and for the HTTP client's
/// `https://` requests alike: the request, the relay's verdict, and each `407` answered through
/// a `ClientAuthSession` — on the same connection while the relay keeps it (NTLM and Negotiate
/// need that), on a new one otherwise — and Negotiate's final token checked on the `200`.
/// Callers turn the `Outcome` into their own errors and failover; the protocol lives here once.
struct ProxyConnectExchange {
    /// Where the tunnel goes: a name or IP literal (IPv6 without brackets), and a port.
    let host: String
    let port: UInt16
    let relay: RelayEndpoint
    let credentials: ClientCredentials?
    /// Most `CONNECT`s on this relay for one tunnel (NTLM takes two, Negotiate a few).
    let maxLegs: Int
    /// How long the relay may take to answer each `CONNECT`; nil leaves it to the stream's own
    /// read timeout.
    let answerTimeout: Duration?

    /// How the exchange ended. On every outcome but `established` its connection is closed.
    enum Outcome {
        /// The tunnel is open; `leftover` came after the `200` and belongs to the tunnel.
        case established(any ClientByteStream, leftover: [UInt8])
        /// The relay refused with something other than a `407`, or closed before answering,
        /// or did not answer as an HTTP proxy (`status` 0 and a local reason).
        case refused(ProxyConnectHandshake.Failure)
        /// The relay wants credentials that are missing, refused or cannot answer its challenge,
        /// or it kept asking; `failure` is its last `407`, nil after too many legs.
        case authFailed(ProxyConnectHandshake.Failure?, why: String)
        /// The relay's `200` carried a Negotiate token that does not prove it holds the key.
        case unproven(ClientAuthError)
        /// Writing the `CONNECT` or reading the answer failed (`timeout`, `cancelled`, a reset).
        case broken(RelayClientError)
        /// A new connection for the next leg could not be made.
        case reconnectFailed(RelayClientError)
    }

    /// `host:port` as the request line says it: what a Digest answer must name as its `uri`.
    var authority: String { ProxyConnectHandshake.authority(host: host, port: port) }

    /// Runs the exchange over `first`, calling `reconnect` when a leg needs a new connection.
    func run(on first: any ClientByteStream,
             reconnect: () async throws(RelayClientError) -> any ClientByteStream) async -> Outcome {
        var stream = first
        var auth = credentials.map { ClientAuthSession(credentials: $0, host: relay.url.cookieHost, peer: .proxy) }
        var authorization: String?
        for _ in 0..<max(1, maxLegs) {
            let progress: ProxyConnectHandshake.Progress
            let established: [String]
            do throws(RelayClientError) {
                (progress, established) = try await leg(on: stream, authorization: authorization)
            } catch {
                stream.close()
                return .broken(error)
            }
            switch progress {
            case .needMore:
                preconditionFailure("a leg returns only a verdict")
            case .established(let leftover):
                if authorization != nil {
                    do throws(ClientAuthError) {
                        try auth?.accepted(headerValues: established)
                    } catch {
                        stream.close()
                        return .unproven(error)
                    }
                }
                return .established(stream, leftover: leftover)
            case .failed(let failure) where failure.status == 407:
                guard var session = auth else {
                    stream.close()
                    return .authFailed(failure, why: "the relay asks for proxy credentials and none were given")
                }
                do throws(ClientAuthError) {
                    authorization = try session.answer(headerValues: failure.challenges, method: "CONNECT", target: authority)
                } catch {
                    stream.close()
                    return .authFailed(failure, why: "\(error)")
                }
                auth = session
                guard authorization != nil else {
                    stream.close()
                    return .authFailed(failure, why: "the 407 carried no challenge")
                }
                if !failure.keepsConnection {
                    stream.close()
                    do throws(RelayClientError) {
                        stream = try await reconnect()
                    } catch {
                        return .reconnectFailed(error)
                    }
                }
            case .failed(let failure):
                stream.close()
                return .refused(failure)
            }
        }
        stream.close()
        return .authFailed(nil, why: "the relay kept asking for proxy authentication")
    }

    /// Sends one `CONNECT` and reads the relay's verdict, with the `Proxy-Authenticate` values
    /// of its 2xx.
    private func leg(on stream: any ClientByteStream, authorization: String?)
        async throws(RelayClientError) -> (ProxyConnectHandshake.Progress, established: [String]) {
        var machine = ProxyConnectHandshake(host: host, port: port,
                                            extraHeaders: authorization.map { [(name: "Proxy-Authorization", value: $0)] } ?? [])
        let request = machine.start()
        let exchange = { () async throws(RelayClientError) -> (ProxyConnectHandshake.Progress, [String]) in
            try await stream.write(request)
            while true {
                let bytes = try await stream.read(maxBytes: 16 * 1024)
                if bytes.isEmpty { return (.failed(machine.receiveEOF()), []) }
                let progress = machine.receive(bytes)
                if case .needMore = progress { continue }
                return (progress, machine.establishedChallenges)
            }
        }
        guard let answerTimeout else { return try await exchange() }
        return try await withStreamDeadline(answerTimeout, closing: stream,
                                            doing: "CONNECT \(authority) through \(relay.url.origin)", exchange)
    }
}
