/// The audit rows a session writes, built from what it knows of the request at that point.
/// Every allowed request has an open row and exactly one close row; a request refused
/// before its open row (or whose open row could not be stored) has one `refused` row.
extension ProxySession {
    /// The open row: the allowed decision, naming the first checked address to be tried.
    /// Its commit is awaited: nothing is relayed before it is stored.
    static func openRow(_ request: Request) -> ProxySessionAction {
        let event: AuditEvent
        switch request.kind {
        case .tunnel: event = .tunnelOpen
        case .forward: event = .requestOpen
        }
        return .audit(AuditEntry(event: event, decision: .allow, reason: .allowed, target: request.target,
                                 resolved: request.resolved, rule: request.rule,
                                 principal: request.principal?.name, scheme: request.principal?.scheme),
                      awaitCommit: true)
    }

    /// The close row of a forwarded exchange, with the bytes and status it carried.
    static func closeEntry(_ exchange: Exchange, reason: ReasonCode, now: UInt64) -> AuditEntry {
        let request = exchange.request
        return AuditEntry(event: .requestClose, decision: .allow, reason: reason, target: request.target,
                          resolved: request.resolved, rule: request.rule, status: exchange.status,
                          bytesUp: exchange.bytesUp, bytesDown: exchange.bytesDown,
                          durationMs: ProxySessionTiming.milliseconds(from: request.startedAt, to: now),
                          principal: request.principal?.name, scheme: request.principal?.scheme)
    }

    /// The close row of an opened request that never relayed anything; `status` is what
    /// the client was answered (nil: it was gone).
    static func failureCloseEntry(_ request: Request, reason: ReasonCode, status: Int?, now: UInt64) -> AuditEntry {
        let event: AuditEvent
        switch request.kind {
        case .tunnel: event = .tunnelClose
        case .forward: event = .requestClose
        }
        return AuditEntry(event: event, decision: .allow, reason: reason, target: request.target,
                          resolved: request.resolved, rule: request.rule, status: status,
                          durationMs: ProxySessionTiming.milliseconds(from: request.startedAt, to: now),
                          principal: request.principal?.name, scheme: request.principal?.scheme)
    }

    /// The row of an attempt that ended with no open row stored and no client left to answer.
    static func unopenedEntry(_ request: Request, reason: ReasonCode, now: UInt64) -> AuditEntry {
        AuditEntry(event: .refused, decision: .deny, reason: reason, target: request.target,
                   resolved: request.resolved, rule: request.rule,
                   durationMs: ProxySessionTiming.milliseconds(from: request.startedAt, to: now),
                   principal: request.principal?.name, scheme: request.principal?.scheme)
    }

    /// The close row of a TRACE or OPTIONS the relay answered itself with `answerBytes`.
    static func answeredByRelayEntry(_ request: Request, answerBytes: Int, now: UInt64) -> AuditEntry {
        AuditEntry(event: .requestClose, decision: .allow, reason: .answeredByRelay, target: request.target,
                   rule: request.rule, status: 200, bytesDown: Int64(answerBytes),
                   durationMs: ProxySessionTiming.milliseconds(from: request.startedAt, to: now),
                   principal: request.principal?.name, scheme: request.principal?.scheme)
    }

    /// The row of a refused authentication, naming whom the client claimed to be.
    func authRefusalEntry(_ refusal: ProxyAuthRefusal, pending: PendingRequest, now: UInt64) -> AuditEntry {
        var claimed = refusal.claimedPrincipal
        if !refusal.claimedIsAccount, let name = claimed, let pseudonym = settings.unknownNamePseudonym {
            // Not known to be an account: it may be a password typed in the wrong field.
            claimed = pseudonym(name)
        }
        return AuditEntry(event: .refused, decision: .deny, reason: refusal.reason, target: pending.target,
                          status: refusal.status,
                          durationMs: ProxySessionTiming.milliseconds(from: pending.startedAt, to: now),
                          principal: claimed, scheme: refusal.scheme, reasonDetail: refusal.detail)
    }
}
