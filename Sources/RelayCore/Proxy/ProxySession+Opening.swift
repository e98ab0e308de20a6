/// Opening the upstream of a decided request through the shared `UpstreamOpening` (the
/// same steps as a static forward's), and what follows once it is open: a tunnel, a
/// forwarded exchange, or the relay's own answer.
extension ProxySession {
    /// Resolves (names) or checks (literals) the target, then connects while the open row
    /// is written; `openRow` is `.stored` for a request retried under its open row.
    mutating func open(_ request: consuming Request, openRow: UpstreamOpening.OpenRow, now: UInt64,
                       into actions: inout [ProxySessionAction]) {
        let (opening, action) = UpstreamOpening.start(host: request.host, port: request.port, rule: request.rule,
                                                      openRow: openRow, checkedBy: settings.registry,
                                                      localHost: settings.localHost)
        perform(action, request: request, opening: opening, cancellingConnect: false, now: now, into: &actions)
    }

    /// Opens a request whose upstream needs no connect (a kept-alive link, or the relay
    /// answering itself): only its open row is written and awaited.
    mutating func openWithoutConnect(_ request: consuming Request, now: UInt64, into actions: inout [ProxySessionAction]) {
        let (opening, action) = UpstreamOpening.withoutConnect()
        perform(action, request: request, opening: opening, cancellingConnect: false, now: now, into: &actions)
    }

    /// The addresses of the name being opened.
    mutating func resolved(_ addresses: [IPAddress], request: consuming Request, opening: consuming UpstreamOpening, now: UInt64,
                           into actions: inout [ProxySessionAction]) {
        let action = opening.resolved(addresses, checkedBy: settings.registry, localHost: settings.localHost)
        perform(action, request: request, opening: opening, cancellingConnect: false, now: now, into: &actions)
    }

    /// The connect under way succeeded: the connection is kept as this client's link, to
    /// relay on once the open row is stored, and to reuse after.
    mutating func upstreamConnected(request: consuming Request, opening: consuming UpstreamOpening, now: UInt64,
                                    into actions: inout [ProxySessionAction]) {
        if let address = opening.connectingTo {
            upstream = UpstreamLink(host: request.host, port: request.port, resolved: request.resolved ?? "",
                                    address: address, principal: request.principal,
                                    tls: UpstreamTLSTerms.of(request, in: settings.registry))
        }
        openingOutcome(.connected, request: request, opening: opening, now: now, into: &actions)
    }

    /// Any other outcome of the opening under way.
    mutating func openingOutcome(_ event: UpstreamOpening.Event, request: consuming Request, opening: consuming UpstreamOpening, now: UInt64,
                                 into actions: inout [ProxySessionAction]) {
        let cancellingConnect = opening.isConnecting
        let action = opening.handle(event)
        perform(action, request: request, opening: opening, cancellingConnect: cancellingConnect, now: now, into: &actions)
    }

    /// Carries out the opening's next step. `cancellingConnect`: a connect was outstanding
    /// before this step, so ending now closes (cancels) the upstream. The request and the
    /// opening are consumed, each step's state built from them without a copy (a request
    /// holds its whole head).
    private mutating func perform(_ action: UpstreamOpening.Action, request: consuming Request,
                                  opening: consuming UpstreamOpening, cancellingConnect: Bool, now: UInt64,
                                  into actions: inout [ProxySessionAction]) {
        switch action {
        case .resolve(let name):
            actions.append(.resolve(name: name, port: request.port))
            state = .opening(request, opening)
        case .writeOpenRowAndConnect(let address):
            request.resolved = Endpoint.text(address, request.port)
            actions.append(Self.openRow(request))
            actions.append(.connect(address, port: request.port))
            state = .opening(request, opening)
        case .writeOpenRow:
            actions.append(Self.openRow(request))
            state = .opening(request, opening)
        case .connect(let address):
            request.resolved = Endpoint.text(address, request.port)
            actions.append(.connect(address, port: request.port))
            state = .opening(request, opening)
        case .wait, .ignore:
            state = .opening(request, opening)
        case .failureWaitsForOpenRow:
            // The client is answered once the commit says which row the failure goes in.
            state = .opening(request, opening)
        case .closeLateConnection:
            state = .opening(request, opening)
            actions.append(.closeUpstream)
        case .relay:
            if request.isAnsweredByRelay {
                answerLocally(request, now: now, into: &actions)
            } else {
                startRelaying(request, now: now, into: &actions)
            }
        case .refuse(let reason, let refused):
            request.note(refused)
            refuseUnrouted(reason, target: request.target, rule: request.rule, resolved: request.resolved,
                           durationMs: ProxySessionTiming.milliseconds(from: request.startedAt, to: now),
                           principal: request.principal, cancellingConnect: cancellingConnect, now: now, into: &actions)
        case .failOpened(let reason, let refused):
            request.note(refused)
            failOpened(request, reason: reason, cancellingConnect: cancellingConnect, now: now, into: &actions)
        case .closeUnopened(let reason):
            // Allowed by name, lost before its addresses were checked: recorded, as a forward's is.
            actions.append(.audit(Self.unopenedEntry(request, reason: reason, now: now), awaitCommit: false))
            closeAll(into: &actions, cancellingConnect: cancellingConnect)
        case .closeOpened(let reason):
            actions.append(.audit(Self.failureCloseEntry(request, reason: reason, status: nil, now: now), awaitCommit: false))
            closeAll(into: &actions, cancellingConnect: cancellingConnect)
        case .closeWhileOpenRowPending:
            // A close row only for a stored open row: it waits for the commit's answer.
            closeAll(into: &actions, cancellingConnect: cancellingConnect)
            state = .opening(request, opening)
        case .recordClose(let reason):
            state = .closed
            actions.append(.audit(Self.failureCloseEntry(request, reason: reason, status: nil, now: now), awaitCommit: false))
        case .recordRefusal(let reason):
            // The allowed decision was never stored: the attempt is recorded as refused.
            state = .closed
            actions.append(.audit(Self.unopenedEntry(request, reason: reason, now: now), awaitCommit: false))
        }
    }

    /// Every address failed after the open row was written: its close row carries why, and
    /// the client gets the refusal.
    private mutating func failOpened(_ request: Request, reason: ReasonCode, cancellingConnect: Bool, now: UInt64,
                                     into actions: inout [ProxySessionAction]) {
        let status = reason.refusalStatus ?? 502
        actions.append(.audit(Self.failureCloseEntry(request, reason: reason, status: status, now: now), awaitCommit: false))
        actions.append(.sendToClient(ProxyResponses.refusal(reason, status: status)))
        closeAll(into: &actions, cancellingConnect: cancellingConnect)
    }

    private mutating func startRelaying(_ request: consuming Request, now: UInt64, into actions: inout [ProxySessionAction]) {
        switch request.kind {
        case .tunnel:
            state = .tunnelled
            upstream = nil
            let context = TunnelContext(target: request.target, resolved: request.resolved ?? "",
                                        rule: request.rule, startedAt: request.startedAt, principal: request.principal,
                                        host: request.host)
            actions.append(.startTunnel(context, established: ProxyResponses.connectEstablished(proxyAuthenticate: request.mutualAuth),
                                        clientLeftover: clientBuffer))
            clientBuffer = []
        case .forward(let pathAndQuery, let hostHeader, let framing, let maxForwards):
            var sent = request.head
            if let maxForwards {
                sent.headers.remove("max-forwards")
                sent.headers.append(name: "Max-Forwards", value: String(MaxForwards.forwarded(maxForwards)))
            }
            let head = ForwardRewriter.upstreamRequest(sent, hostHeader: hostHeader,
                                                       pathAndQuery: pathAndQuery, viaName: settings.viaName)
            var exchange = Exchange(
                request: request, requestFramer: BodyFramer(framing), requestDone: framing == .none,
                responseParser: HTTPResponseHeadParser(limits: settings.headLimits),
                closeAfter: ForwardRewriter.wantsClose(version: request.head.version, headers: request.head.headers))
            exchange.bytesUp += Int64(head.count)
            actions.append(.sendToUpstream(head))
            upstreamBuffer = []
            if exchange.requestDone || clientBuffer.isEmpty {
                state = .forwarding(exchange)
            } else {
                let early = clientBuffer
                clientBuffer = []
                early.withUnsafeBytes { forwardRequestBody($0, exchange: &exchange, now: now, into: &actions) }
            }
        }
    }

    /// The relay's own answer to a TRACE or OPTIONS whose hop count is used up, once its
    /// open record is stored, and the close record that pairs with it. A request body is
    /// left unread, so the connection closes after the answer.
    private mutating func answerLocally(_ request: Request, now: UInt64, into actions: inout [ProxySessionAction]) {
        guard case .forward(_, _, let framing, _) = request.kind else {
            preconditionFailure("only a forwarded request is answered by the relay")
        }
        let closeAfter = framing != .none || ForwardRewriter.wantsClose(version: request.head.version, headers: request.head.headers)
        let answer = request.head.method == "TRACE" ? LocalAnswer.trace(request.head, closeAfter: closeAfter)
                                                    : LocalAnswer.options(closeAfter: closeAfter)
        actions.append(.sendToClient(answer))
        actions.append(.audit(Self.answeredByRelayEntry(request, answerBytes: answer.count, now: now), awaitCommit: false))
        if closeAfter { return closeAll(into: &actions) }
        state = .readingHead
        if !clientBuffer.isEmpty {
            processHead(now: now, into: &actions)
        }
    }
}

extension ProxySession.Request {
    /// A refusal of one of the resolved addresses: the rows name that address, and the rule
    /// that refused it (a built-in guard is no rule: the allow rule stays).
    mutating func note(_ refused: UpstreamOpening.RefusedAddress?) {
        guard let refused else { return }
        resolved = Endpoint.text(refused.address, port)
        rule = refused.rule ?? rule
    }
}
