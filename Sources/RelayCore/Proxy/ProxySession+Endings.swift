/// How a session refuses a request and closes its connection.
extension ProxySession {
    /// Refuses a request with no open row: its refusal row, the refusal, then the close.
    /// `cancellingConnect`: a connect is outstanding and is abandoned with the upstream.
    mutating func refuseUnrouted(_ reason: ReasonCode, target: String?, rule: String?, resolved: String? = nil,
                                 durationMs: Int64? = nil, principal: AuthPrincipal? = nil,
                                 cancellingConnect: Bool = false, now: UInt64, into actions: inout [ProxySessionAction]) {
        let status = reason.refusalStatus ?? 400
        actions.append(.audit(AuditEntry(event: .refused, decision: .deny, reason: reason, target: target,
                                         resolved: resolved, rule: rule, status: status, durationMs: durationMs,
                                         principal: principal?.name, scheme: principal?.scheme),
                              awaitCommit: false))
        actions.append(.sendToClient(ProxyResponses.refusal(reason, status: status)))
        closeAll(into: &actions, cancellingConnect: cancellingConnect)
    }

    /// Ends the connection. `cutting` is an exchange abandoned before it finished: a side
    /// whose message it leaves incomplete is reset, never closed in order, because a FIN
    /// after part of a body reads as its end when the body is delimited by close (and as a
    /// clean end of the connection otherwise): the response once its head went out, the
    /// request while its body was still coming. `cancellingConnect`: a connect is
    /// outstanding, and closing the upstream abandons it.
    mutating func closeAll(into actions: inout [ProxySessionAction], cutting exchange: Exchange? = nil,
                           cancellingConnect: Bool = false) {
        if headTimerRunning {
            headTimerRunning = false
            actions.append(.stopHeaderTimer)
        }
        if upstream != nil || cancellingConnect || isForwarding {
            actions.append(exchange.map { !$0.requestDone } == true ? .resetUpstream : .closeUpstream)
        }
        upstream = nil
        state = .closed
        // A tunnel that never opened is no tunnel: its place goes back now, not when the
        // socket is finally closed (a refused client is read until it closes, for seconds).
        quotaPlace?.release()
        quotaPlace = nil
        actions.append(exchange?.responseHeadSent == true ? .resetClient : .closeClient)
    }

    private var isForwarding: Bool {
        if case .forwarding = state { return true }
        return false
    }
}
