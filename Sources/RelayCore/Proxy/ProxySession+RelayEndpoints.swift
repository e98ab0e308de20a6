/// Requests addressed to the relay itself (`WellKnownEndpoint`): the status answered to anyone,
/// the configuration after proxy authentication as for a proxied request. Each is answered
/// here, with no upstream and no open row, and recorded in one row naming the endpoint.
extension ProxySession {
    /// An origin-form request for one of the endpoints, after the Host check every request has.
    mutating func routeToRelay(_ endpoint: WellKnownEndpoint, head: HTTPRequestHead, now: UInt64,
                               into actions: inout [ProxySessionAction]) {
        guard WellKnownEndpoint.methods.contains(head.method) else {
            actions.append(.audit(AuditEntry(event: .refused, decision: .deny, reason: .methodNotAllowed,
                                             target: endpoint.rawValue, status: 405), awaitCommit: false))
            actions.append(.sendToClient(RelayEndpointAnswer.methodNotAllowed()))
            return closeAll(into: &actions)
        }
        // A body means nothing here, but its framing must still be unambiguous: it is what
        // tells where the next request would start.
        let framing: BodyFraming
        switch MessageFraming.request(head) {
        case .success(let value): framing = value
        case .failure(let reason):
            return refuseUnrouted(reason, target: endpoint.rawValue, rule: nil, now: now, into: &actions)
        }
        let pending = PendingRequest(head: head, addressee: .relay(endpoint, framing: framing), target: endpoint.rawValue,
                                     startedAt: now)
        switch endpoint {
        case .status:
            // Clients ask it before they have credentials, to choose a relay.
            answerRelayEndpoint(endpoint, head: head, framing: framing, principal: nil, mutualAuth: nil,
                                startedAt: now, now: now, into: &actions)
        case .config where settings.requiresAuth:
            authenticate(pending, now: now, into: &actions)
        case .config:
            decide(pending, principal: nil, mutualAuth: nil, now: now, into: &actions)
        }
    }

    /// The endpoint's answer and its row. The connection stays for the next request unless
    /// the client asked to close, a body was left unread (where the next request starts is
    /// unknown), or the relay is draining (the client should move to another relay). The
    /// caller reads what is buffered next.
    mutating func answerRelayEndpoint(_ endpoint: WellKnownEndpoint, head: HTTPRequestHead, framing: BodyFraming,
                                      principal: AuthPrincipal?, mutualAuth: String?, startedAt: UInt64, now: UInt64,
                                      into actions: inout [ProxySessionAction]) {
        let draining = settings.relayFacts.isDraining()
        let closeAfter = draining || framing != .none
            || ForwardRewriter.wantsClose(version: head.version, headers: head.headers)
        let status: Int
        let document: JSONValue
        switch endpoint {
        case .status:
            status = draining ? 503 : 200
            document = RelayEndpointDocuments.status(settings.relayFacts, draining: draining)
        case .config:
            status = 200
            document = RelayEndpointDocuments.config(principal: principal, registry: settings.registry)
        }
        let answer = RelayEndpointAnswer.json(status: status, document: document, headOnly: head.method == "HEAD",
                                              closeAfter: closeAfter, http1_0: head.version == .http1_0,
                                              proxyAuthenticate: mutualAuth)
        actions.append(.sendToClient(answer))
        actions.append(.audit(AuditEntry(event: .requestClose, decision: .allow, reason: endpoint.reason,
                                         target: endpoint.rawValue, status: status, bytesDown: Int64(answer.count),
                                         durationMs: ProxySessionTiming.milliseconds(from: startedAt, to: now),
                                         principal: principal?.name, scheme: principal?.scheme),
                              awaitCommit: false))
        if closeAfter { return closeAll(into: &actions) }
        state = .readingHead
    }
}
