/// Which input is expected in which state, and what each does there.
///
/// A driver keeps to a contract the session's actions set out: it reads the client only
/// while `wantsClientBytes` and the upstream only while `wantsUpstreamBytes`; it answers
/// each `.resolve`, `.connect`, awaited `.audit` and `.authenticate` once; it fires the head
/// timer only between `.startHeaderTimer` and `.stopHeaderTimer`. Within that contract some
/// inputs still arrive late, and each is named where it is handled: a peer or a timer
/// acting as the session moves on, an answer that cannot be cancelled (a resolution, an
/// authentication helper, a commit) arriving after the session closed. An input outside the
/// contract is a bug in the driver and stops the process (`preconditionFailure`), naming
/// the state and the input.
extension ProxySession {
    /// Bytes from the client.
    public mutating func clientBytes(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> [ProxySessionAction] {
        var actions: [ProxySessionAction] = []
        switch state {
        case .readingHead:
            clientBuffer.append(contentsOf: bytes)
            processHead(now: now, into: &actions)
        case .forwarding(var exchange) where !exchange.requestDone:
            forwardRequestBody(bytes, exchange: &exchange, now: now, into: &actions)
        case .forwarding, .authenticating, .opening:
            // Taken while the session waits (a driver pausing reads on `wantsClientBytes`
            // delivers at most one read here): kept for the next request, the body of
            // this one, or the tunnel.
            clientBuffer.append(contentsOf: bytes)
        case .tunnelled, .closed:
            // Nobody reads them here any more: the tunnel's relay owns the client, or the
            // connection is closing and reads only to let the client finish sending.
            break
        }
        return actions
    }

    /// Bytes from the upstream.
    public mutating func upstreamBytes(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> [ProxySessionAction] {
        var actions: [ProxySessionAction] = []
        switch state {
        case .forwarding(var exchange):
            forwardResponse(bytes, exchange: &exchange, now: now, into: &actions)
        case .readingHead where upstream != nil:
            // An idle kept-alive upstream must not talk; drop it rather than guess.
            upstream = nil
            actions.append(.closeUpstream)
        case .closed:
            // The upstream is being closed; what it still sent has no request to answer.
            break
        case .readingHead, .authenticating, .opening, .tunnelled:
            preconditionFailure("ProxySession: upstream bytes in \(state.name), which does not read the upstream")
        }
        return actions
    }

    /// Every other outcome of an action, and what peers and timers do. Once `isFinished`,
    /// the driver delivers only the answer to an open row's commit still owed (the row may
    /// owe its close row); it drops every other event, so none is asked to mean anything.
    public mutating func handle(_ event: ProxySessionEvent, now: UInt64) -> [ProxySessionAction] {
        var actions: [ProxySessionAction] = []
        switch event {
        case .clientEOF: clientEOF(now: now, into: &actions)
        case .resolved(let addresses): resolution(addresses, event: event, now: now, into: &actions)
        case .resolveFailed: resolution(nil, event: event, now: now, into: &actions)
        case .upstreamConnected: connectOutcome(.connected, event: event, now: now, into: &actions)
        case .upstreamConnectFailed(let reason): connectOutcome(.connectFailed(reason), event: event, now: now, into: &actions)
        case .auditCommitted: commitOutcome(.openRowCommitted, event: event, now: now, into: &actions)
        case .auditFailed: commitOutcome(.openRowFailed, event: event, now: now, into: &actions)
        case .upstreamEOF: upstreamLost(.upstreamClosed, event: event, now: now, into: &actions)
        case .upstreamFailed: upstreamLost(.upstreamReset, event: event, now: now, into: &actions)
        case .headerTimeout: headerTimeout(into: &actions)
        case .authFinished(let outcome): authAnswered(outcome, now: now, into: &actions)
        case .connectionLost(let reason): connectionLost(reason, now: now, into: &actions)
        }
        return actions
    }

    private mutating func clientEOF(now: UInt64, into actions: inout [ProxySessionAction]) {
        switch state {
        case .readingHead:
            // Nothing was asked (or only part of a head): no decision to audit.
            closeAll(into: &actions)
        case .forwarding(let exchange):
            clientEnded(exchange, now: now, into: &actions)
        case .authenticating, .opening:
            // A client may half-close once its request is sent: it still gets the answer
            // (or, after a CONNECT, the relay carries the half-close into the tunnel).
            break
        case .tunnelled, .closed:
            // The client closing as its connection is handed off or closed: nothing more to do.
            break
        }
    }

    /// `.resolved` (with its addresses) or `.resolveFailed` (nil).
    private mutating func resolution(_ addresses: [IPAddress]?, event: ProxySessionEvent, now: UInt64,
                                     into actions: inout [ProxySessionAction]) {
        switch state {
        case .opening(let request, let opening):
            if let addresses {
                resolved(addresses, request: request, opening: opening, now: now, into: &actions)
            } else {
                openingOutcome(.resolveFailed, request: request, opening: opening, now: now, into: &actions)
            }
        case .closed:
            // A resolution cannot be cancelled: it answers after the client left.
            break
        case .readingHead, .authenticating, .forwarding, .tunnelled:
            preconditionFailure("ProxySession: \(event.name) in \(state.name), where no resolution is outstanding")
        }
    }

    private mutating func connectOutcome(_ outcome: UpstreamOpening.Event, event: ProxySessionEvent, now: UInt64,
                                         into actions: inout [ProxySessionAction]) {
        switch state {
        case .opening(let request, let opening):
            if case .connected = outcome {
                upstreamConnected(request: request, opening: opening, now: now, into: &actions)
            } else {
                openingOutcome(outcome, request: request, opening: opening, now: now, into: &actions)
            }
        case .closed:
            // The session closed with the connect outstanding; closing the upstream cancels
            // it, but a connection that completed all the same is closed too.
            if case .connected = outcome {
                actions.append(.closeUpstream)
            }
        case .readingHead, .authenticating, .forwarding, .tunnelled:
            preconditionFailure("ProxySession: \(event.name) in \(state.name), where no connect is outstanding")
        }
    }

    private mutating func commitOutcome(_ outcome: UpstreamOpening.Event, event: ProxySessionEvent, now: UInt64,
                                        into actions: inout [ProxySessionAction]) {
        switch state {
        case .opening(let request, let opening):
            openingOutcome(outcome, request: request, opening: opening, now: now, into: &actions)
        case .closed:
            // Every row of a closed session is settled (one lost before its open row's
            // commit stays in `opening` until the commit answers): a repeated answer changes
            // nothing.
            break
        case .readingHead, .authenticating, .forwarding, .tunnelled:
            preconditionFailure("ProxySession: \(event.name) in \(state.name), where no open row awaits its commit")
        }
    }

    /// `.upstreamEOF` or `.upstreamFailed`, recorded as `reason` if it cuts an exchange.
    private mutating func upstreamLost(_ reason: ReasonCode, event: ProxySessionEvent, now: UInt64,
                                        into actions: inout [ProxySessionAction]) {
        switch state {
        case .forwarding(var exchange):
            upstreamEnded(&exchange, reason: reason, now: now, into: &actions)
        case .readingHead where upstream != nil:
            // The idle kept-alive link closed: the next request opens a fresh one.
            upstream = nil
            actions.append(.closeUpstream)
        case .authenticating where upstream != nil, .opening where upstream != nil:
            // The kept-alive link failed while the next request is authenticated or its open
            // row committed (its writer reports late): the failure shows when the request is
            // sent on it, where a request safe to repeat goes again on a fresh connection.
            break
        case .tunnelled, .closed:
            // The upstream closing as it is handed off or closed: nothing more to do.
            break
        case .readingHead, .authenticating, .opening:
            preconditionFailure("ProxySession: \(event.name) in \(state.name), which holds no upstream")
        }
    }

    private mutating func headerTimeout(into actions: inout [ProxySessionAction]) {
        switch state {
        case .readingHead:
            // No request arrived: counted with the source's other refusals of this kind. A
            // client that sent part of a head is told why; one that sent nothing is closed.
            headTimerRunning = false
            let answered = !clientBuffer.isEmpty
            actions.append(.countRefusal(.headerTimeout, status: answered ? ReasonCode.headerTimeout.refusalStatus : nil))
            if answered {
                actions.append(.sendToClient(ProxyResponses.refusal(.headerTimeout)))
            }
            closeAll(into: &actions)
        case .closed:
            // The timer fired as the connection closed.
            break
        case .authenticating, .opening, .forwarding, .tunnelled:
            // The timer was stopped when the head completed, so this is outside the contract;
            // but a timer with nothing left to time harms no one, so it is ignored rather
            // than stopping the process.
            break
        }
    }

    private mutating func authAnswered(_ outcome: ProxyAuthOutcome, now: UInt64, into actions: inout [ProxySessionAction]) {
        switch state {
        case .authenticating(let pending):
            authFinished(outcome, pending: pending, now: now, into: &actions)
        case .closed:
            // A helper's answer cannot be cancelled: it arrives after the client left.
            break
        case .readingHead, .opening, .forwarding, .tunnelled:
            preconditionFailure("ProxySession: authentication answered in \(state.name), where none was asked")
        }
    }

    private mutating func connectionLost(_ reason: ReasonCode, now: UInt64, into actions: inout [ProxySessionAction]) {
        switch state {
        case .readingHead, .authenticating:
            // No decision was made: nothing to audit.
            closeAll(into: &actions)
        case .opening(let request, let opening):
            openingOutcome(.abandoned(reason), request: request, opening: opening, now: now, into: &actions)
        case .forwarding(let exchange):
            actions.append(.audit(Self.closeEntry(exchange, reason: reason, now: now), awaitCommit: false))
            closeAll(into: &actions, cutting: exchange)
        case .tunnelled, .closed:
            // A timeout or shutdown racing the hand-off or the close: nothing more to do.
            break
        }
    }
}

extension ProxySession.State {
    /// The state's name for a precondition message (its payload holds request bytes).
    var name: String {
        switch self {
        case .readingHead: return "readingHead"
        case .authenticating: return "authenticating"
        case .opening: return "opening"
        case .forwarding: return "forwarding"
        case .tunnelled: return "tunnelled"
        case .closed: return "closed"
        }
    }
}

extension ProxySessionEvent {
    /// The event's name for a precondition message.
    var name: String {
        switch self {
        case .clientEOF: return "clientEOF"
        case .resolved: return "resolved"
        case .resolveFailed: return "resolveFailed"
        case .upstreamConnected: return "upstreamConnected"
        case .upstreamConnectFailed: return "upstreamConnectFailed"
        case .auditCommitted: return "auditCommitted"
        case .auditFailed: return "auditFailed"
        case .upstreamEOF: return "upstreamEOF"
        case .upstreamFailed: return "upstreamFailed"
        case .headerTimeout: return "headerTimeout"
        case .authFinished: return "authFinished"
        case .connectionLost: return "connectionLost"
        }
    }
}
