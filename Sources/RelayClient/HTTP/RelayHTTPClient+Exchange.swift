import RelayCore

extension RelayHTTPClient {
    /// One request on one relay, through as many authentication legs as the relay and the
    /// server ask for, and one more connection when a pooled one turned out stale.
    func exchange(_ request: RedirectRequest, body: RelayHTTPBody, on relay: RelayEndpoint,
                  serverCredentials: ClientCredentials?) async throws(HTTPAttemptFailure) -> RelayHTTPResponse {
        let url = request.url
        let tunnelled = url.scheme == .https
        let key: HTTPPoolKey = tunnelled ? .tunnel(relay, url.origin) : .relay(relay)
        // Each peer's Digest `uri` is the target as that peer reads it: the relay gets the
        // absolute form, the server (after the relay rewrote it) the origin form.
        let target = tunnelled ? url.target : "\(url.scheme.rawValue)://\(url.authority)\(url.target)"
        var proxyAnswer: String?
        var serverAnswer: String?
        var proxySession: ClientAuthSession?
        var serverSession: ClientAuthSession?
        var bodySent = false

        for _ in 0..<Self.maxAttempts {
            let (connection, reused) = try await connection(for: key, url: url)
            var sessions = connection.auth.withLock { $0 }
            if !tunnelled, let credentials = configuration.proxyCredentials {
                proxySession = proxySession ?? sessions.proxy
                    ?? ClientAuthSession(credentials: credentials, host: relay.url.cookieHost, peer: .proxy)
            }
            if let credentials = serverCredentials {
                serverSession = serverSession ?? sessions.servers[url.origin]
                    ?? ClientAuthSession(credentials: credentials, host: url.cookieHost, peer: .server)
            }

            var extra: [(name: String, value: String)] = []
            if let value = proxyAnswer ?? proxySession?.preemptive(method: request.method, target: target) {
                extra.append(("Proxy-Authorization", value))
            }
            if let value = serverAnswer ?? serverSession?.preemptive(method: request.method, target: url.target) {
                extra.append(("Authorization", value))
            }
            if let cookie = cookieHeader(for: url) { extra.append(("Cookie", cookie)) }
            let framing: ClientRequestHead.Framing = body.kind == .none ? .none
                : body.length.map { .contentLength($0) } ?? .chunked
            guard let head = ClientRequestHead.encode(method: request.method, url: url, form: tunnelled ? .origin : .absolute,
                                                      headers: request.headers, extra: extra, framing: framing)
            else {
                connection.close()
                throw .final(RelayHTTPError(.invalidRequest, "the method or a header field cannot be sent as given"))
            }
            if bodySent, body.kind == .oneShot {
                connection.close()
                throw .final(RelayHTTPError(.bodyNotReplayable, "the request must be sent again but its body was a one-shot stream"))
            }

            var reader = HTTPResponseReader(connection: connection)
            let responseHead: HTTPResponseHead
            do throws(RelayHTTPError) {
                bodySent = bodySent || body.kind != .none
                try await send(head, body: body, framing: framing, on: connection)
                responseHead = try await reader.readHead()
            } catch {
                connection.close()
                let lost = RetryDecision.Failure.connectionLost(responseStarted: reader.responseStarted)
                if reused, !reader.responseStarted,
                   RetryDecision(failure: lost, method: request.method, body: body.kind).mayResend {
                    continue
                }
                throw HTTPAttemptFailure(error: error, retry: error.code == .badResponse ? nil : lost, relayAtFault: false)
            }

            let responseFraming: BodyFraming
            switch MessageFraming.response(responseHead, requestMethod: request.method) {
            case .success(let found): responseFraming = found
            case .failure(let code):
                connection.close()
                throw .final(RelayHTTPError(.badResponse, "the response framing is ambiguous (\(code))", httpStatus: responseHead.status))
            }
            let bodySource = HTTPResponseBodySource(reader: reader, framing: responseFraming, keepAlive: Self.keepsAlive(responseHead),
                                                    release: { [pool] in pool.park($0) })
            let responseBody = RelayHTTPResponseBody(source: bodySource)

            if responseHead.status == 407, !tunnelled {
                guard var session = proxySession else {
                    await responseBody.cancel()
                    throw .final(RelayHTTPError(.proxyAuthFailed, "the relay asks for credentials and none are configured",
                                                httpStatus: 407))
                }
                do throws(ClientAuthError) {
                    proxyAnswer = try session.answer(headerValues: responseHead.headers.values("proxy-authenticate"),
                                                     method: request.method, target: target)
                } catch {
                    await responseBody.cancel()
                    throw .final(RelayHTTPError(.proxyAuthFailed, "the relay refused the credentials (\(error))", httpStatus: 407))
                }
                proxySession = session
                guard proxyAnswer != nil else {
                    await responseBody.cancel()
                    throw .final(RelayHTTPError(.proxyAuthFailed, "the relay answered 407 without a challenge", httpStatus: 407))
                }
                try await drainForRetry(responseBody)
                continue
            }
            if responseHead.status == 401, var session = serverSession,
               responseHead.headers.contains("www-authenticate") {
                do throws(ClientAuthError) {
                    serverAnswer = try session.answer(headerValues: responseHead.headers.values("www-authenticate"),
                                                      method: request.method, target: url.target)
                } catch {
                    await responseBody.cancel()
                    throw .final(RelayHTTPError(.serverAuthFailed, "the server refused the credentials (\(error))",
                                                httpStatus: 401))
                }
                serverSession = session
                if serverAnswer != nil {
                    storeCookies(responseHead.headers, from: url)
                    try await drainForRetry(responseBody)
                    continue
                }
            }

            if !tunnelled, let own = RelayGeneratedResponse(responseHead.headers) {
                // The relay's own refusal, not the server's answer: a typed error, and a
                // 503 (the relay overloaded or draining) may go to another relay.
                await responseBody.cancel()
                let status = responseHead.status
                throw HTTPAttemptFailure(
                    error: RelayHTTPError(.relayRefused, "\(own.proxy) refused the request with \(status) (\(own.error))",
                                          httpStatus: status, reasonCode: own.reasonCode),
                    retry: status == 503 ? .relayRefused(status: status) : nil, relayAtFault: status == 503)
            }
            do throws(ClientAuthError) {
                try proxySession?.accepted(headerValues: responseHead.headers.values("proxy-authenticate"))
            } catch {
                await responseBody.cancel()
                throw HTTPAttemptFailure(error: RelayHTTPError(.mutualAuthFailed, "the relay did not prove its identity (\(error))",
                                                               httpStatus: responseHead.status),
                                         retry: nil, relayAtFault: true)
            }
            do throws(ClientAuthError) {
                try serverSession?.accepted(headerValues: responseHead.headers.values("www-authenticate"))
            } catch {
                await responseBody.cancel()
                throw .final(RelayHTTPError(.mutualAuthFailed, "the server did not prove its identity (\(error))",
                                            httpStatus: responseHead.status))
            }
            // Only now is the response the server's, proven where Negotiate offers proof:
            // a relay's own refusal or an unproven answer sets no cookie.
            storeCookies(responseHead.headers, from: url)
            sessions.proxy = proxySession
            if let serverSession { sessions.servers[url.origin] = serverSession }
            connection.auth.withLock { $0 = sessions }
            return RelayHTTPResponse(status: responseHead.status, reason: responseHead.reason, headers: responseHead.headers,
                                     url: url, body: responseBody)
        }
        throw .final(RelayHTTPError(.serverAuthFailed, "gave up after \(Self.maxAttempts) attempts"))
    }

    private func drainForRetry(_ body: RelayHTTPResponseBody) async throws(HTTPAttemptFailure) {
        do throws(RelayHTTPError) {
            try await drain(body)
        } catch {
            // The challenge's body broke off; the next leg opens another connection.
        }
    }

    /// Writes the head, then the body in the framing announced.
    private func send(_ head: [UInt8], body: RelayHTTPBody, framing: ClientRequestHead.Framing,
                      on connection: HTTPClientConnection) async throws(RelayHTTPError) {
        let stream = connection.stream
        do throws(RelayClientError) {
            try await stream.write(head)
        } catch {
            throw .transport(error, "sending the request head")
        }
        guard body.kind != .none else { return }
        let chunked = framing == .chunked
        try await body.produce { bytes throws(RelayHTTPError) in
            do throws(RelayClientError) {
                try await stream.write(chunked ? ClientRequestHead.chunk(bytes) : bytes)
            } catch {
                throw .transport(error, "sending the request body")
            }
        }
        if chunked {
            do throws(RelayClientError) {
                try await stream.write(ClientRequestHead.lastChunk)
            } catch {
                throw .transport(error, "ending the request body")
            }
        }
    }

    /// HTTP/1.1 keeps the connection unless told `close`; HTTP/1.0 only when told `keep-alive`.
    static func keepsAlive(_ head: HTTPResponseHead) -> Bool {
        let tokens = head.headers.tokens("connection")
        if tokens.contains("close") { return false }
        return head.version == .http1_0 ? tokens.contains("keep-alive") : true
    }
}
