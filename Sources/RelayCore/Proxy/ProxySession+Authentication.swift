/// Proxy authentication of a routed request: passed on what the connection already proved
/// (`ConnectionProofs`), or asked of the driver, whose answer grants the request on to the
/// registry or refuses it. It comes before the registry, so an unauthenticated client
/// learns nothing about which destinations exist.
extension ProxySession {
    mutating func authenticate(_ pending: PendingRequest, now: UInt64, into actions: inout [ProxySessionAction]) {
        let head = pending.head
        let offered = head.headers.values("proxy-authorization")
        if offered.count > 1 {
            return refuseUnrouted(.badCredentials, target: pending.target, rule: nil, now: now, into: &actions)
        }
        let version = settings.credentialsVersion?()
        if let principal = proofs.principal(offering: offered.first, version: version) {
            return decide(pending, principal: principal, mutualAuth: nil, now: now, into: &actions)
        }
        state = .authenticating(pending)
        proofs.asking(under: version)
        var originForm: String?
        if case .upstream(.forward(let pathAndQuery, _, _, _), _, _, _) = pending.addressee { originForm = pathAndQuery }
        actions.append(.authenticate(ProxyAuthRequest(authorization: offered.first, method: head.method,
                                                      target: head.target, originForm: originForm)))
    }

    /// The answer to `.authenticate`: a granted request goes on to the registry decision.
    mutating func authFinished(_ outcome: ProxyAuthOutcome, pending: PendingRequest, now: UInt64,
                               into actions: inout [ProxySessionAction]) {
        switch outcome {
        case .granted(let principal, let scope, let mutualAuth):
            proofs.granted(principal, scope: scope, authorization: pending.head.headers.first("proxy-authorization"))
            decide(pending, principal: principal, mutualAuth: mutualAuth, now: now, into: &actions)
            // The relay answered itself: requests that came in while the credentials were
            // checked are next.
            if case .readingHead = state, !clientBuffer.isEmpty {
                processHead(now: now, into: &actions)
            }
        case .refused(let refusal):
            refuseAuthentication(refusal, pending: pending, now: now, into: &actions)
        }
    }

    /// An authentication refusal: a 407 keeps the connection when the client can send its
    /// next attempt on it (no body left unread, no close asked for); anything else closes.
    private mutating func refuseAuthentication(_ refusal: ProxyAuthRefusal, pending: PendingRequest, now: UInt64,
                                               into actions: inout [ProxySessionAction]) {
        var bodiless = true
        switch pending.addressee {
        case .upstream(.forward(_, _, let framing, _), _, _, _), .relay(_, let framing): bodiless = framing == .none
        case .upstream(.tunnel, _, _, _): break
        }
        let keepAlive = refusal.status == 407 && bodiless
            && !ForwardRewriter.wantsClose(version: pending.head.version, headers: pending.head.headers)
        actions.append(.audit(authRefusalEntry(refusal, pending: pending, now: now), awaitCommit: false))
        actions.append(.sendToClient(ProxyResponses.authRefusal(refusal.reason, status: refusal.status,
                                                                challenges: refusal.challenges, keepAlive: keepAlive)))
        // A refused attempt ends what the connection had proved: the client offered new
        // credentials (or began a new handshake) and they did not hold.
        proofs.forget()
        guard keepAlive else { return closeAll(into: &actions) }
        state = .readingHead
        if !clientBuffer.isEmpty {
            processHead(now: now, into: &actions)
        } else if !headTimerRunning {
            // The next attempt is due within the header timeout, not the idle one: a client
            // that stops mid-handshake would otherwise hold its slot, and a helper process
            // reserved for its NTLM or Negotiate handshake, for the whole idle timeout.
            headTimerRunning = true
            actions.append(.startHeaderTimer)
        }
    }
}
