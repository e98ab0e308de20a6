/// From a request head to its destination and rule: parsing, the target's form, framing,
/// the host's normal form, then (after authentication) the registry's decision and the
/// choice between a kept-alive link, the relay's own answer and a new upstream.
extension ProxySession {
    /// Parses and routes the buffered requests while each is answered at once (the relay's
    /// own endpoints): a pipelined burst is a loop here, not a recursion as deep as the burst.
    mutating func processHead(now: UInt64, into actions: inout [ProxySessionAction]) {
        while true {
            let result = clientBuffer.withUnsafeBytes { headParser.parse($0) }
            switch result {
            case .needMore:
                if !headTimerRunning && !clientBuffer.isEmpty {
                    headTimerRunning = true
                    actions.append(.startHeaderTimer)
                }
                return
            case .invalid(let reason):
                return refuseUnrouted(reason, target: nil, rule: nil, now: now, into: &actions)
            case .complete(let head, let headLength):
                if headTimerRunning {
                    headTimerRunning = false
                    actions.append(.stopHeaderTimer)
                }
                clientBuffer.removeFirst(headLength)
                headParser.reset()
                route(head, now: now, into: &actions)
                guard case .readingHead = state, !clientBuffer.isEmpty else { return }
            }
        }
    }

    private mutating func route(_ head: HTTPRequestHead, now: UInt64, into actions: inout [ProxySessionAction]) {
        // RFC 9112 3.2 asks every HTTP/1.1 request for Host, CONNECT included (RFC 9110 7.2
        // exempts only HTTP/2's :authority); two of them the parser refused already.
        if head.version == .http1_1 && !head.headers.contains("host") {
            return refuseUnrouted(.missingHost, target: nil, rule: nil, now: now, into: &actions)
        }
        let parsedTarget: RequestTarget
        switch RequestTarget.parse(method: head.method, target: head.target) {
        case .success(let target): parsedTarget = target
        case .failure(let reason): return refuseUnrouted(reason, target: nil, rule: nil, now: now, into: &actions)
        }

        let kind: Kind
        let rawHost: RawHost
        let port: UInt16
        var httpsScheme = false
        switch parsedTarget {
        case .authority(let host, let authorityPort) where head.method == "CONNECT":
            // A CONNECT body has no defined meaning: are those bytes a body or tunnel payload?
            // Refused, except for one `Content-Length: 0`, which says there is none (Java and
            // mobile HTTP stacks send it on every request).
            let lengths = head.headers.values("content-length")
            if head.headers.contains("transfer-encoding") || !(lengths.isEmpty || lengths == ["0"]) {
                return refuseUnrouted(.ambiguousFraming, target: nil, rule: nil, now: now, into: &actions)
            }
            kind = .tunnel
            rawHost = host
            port = authorityPort
        case .absolute(let scheme, let host, let absolutePort, let pathAndQuery) where head.method != "CONNECT":
            guard scheme == "http" || scheme == "https" else {
                return refuseUnrouted(.unsupportedScheme, target: nil, rule: nil, now: now, into: &actions)
            }
            httpsScheme = scheme == "https"
            let framing: BodyFraming
            switch MessageFraming.request(head) {
            case .success(let value): framing = value
            case .failure(let reason): return refuseUnrouted(reason, target: nil, rule: nil, now: now, into: &actions)
            }
            var maxForwards: UInt64?
            if MaxForwards.applies(to: head.method) {
                switch MaxForwards.parse(head.headers) {
                case .success(let value): maxForwards = value
                case .failure(let reason): return refuseUnrouted(reason, target: nil, rule: nil, now: now, into: &actions)
                }
            }
            let hostHeader = ForwardRewriter.hostHeaderValue(scheme: scheme, host: host, port: absolutePort)
            kind = .forward(pathAndQuery: pathAndQuery, hostHeader: hostHeader, framing: framing, maxForwards: maxForwards)
            rawHost = host
            port = absolutePort
        case .origin(let originTarget):
            guard let endpoint = WellKnownEndpoint(target: originTarget) else {
                return refuseUnrouted(.notAProxyRequest, target: nil, rule: nil, now: now, into: &actions)
            }
            return routeToRelay(endpoint, head: head, now: now, into: &actions)
        case .asterisk:
            return refuseUnrouted(.notAProxyRequest, target: nil, rule: nil, now: now, into: &actions)
        case .authority, .absolute:
            // An authority without CONNECT, or CONNECT with anything but an authority.
            return refuseUnrouted(.badTarget, target: nil, rule: nil, now: now, into: &actions)
        }

        let host: Host
        switch HostNormalizer.normalize(rawHost.text, bracketed: rawHost.bracketed) {
        case .success(let value): host = value
        case .failure(let error):
            let target = rawHost.bracketed ? "[\(rawHost.text)]:\(port)" : "\(rawHost.text):\(port)"
            return refuseUnrouted(error.reason, target: target, rule: nil, now: now, into: &actions)
        }
        let pending = PendingRequest(head: head, addressee: .upstream(kind, host: host, port: port, httpsScheme: httpsScheme),
                                     target: Endpoint.text(host, port), startedAt: now)
        guard settings.requiresAuth else {
            return decide(pending, principal: nil, mutualAuth: nil, now: now, into: &actions)
        }
        authenticate(pending, now: now, into: &actions)
    }

    /// The registry decision for an authenticated (or auth-free) request, then the upstream;
    /// or the relay's own answer.
    mutating func decide(_ pending: PendingRequest, principal: AuthPrincipal?, mutualAuth: String?, now: UInt64,
                         into actions: inout [ProxySessionAction]) {
        let (head, target) = (pending.head, pending.target)
        let (kind, host, port, httpsScheme): (Kind, Host, UInt16, Bool)
        switch pending.addressee {
        case .relay(let endpoint, let framing):
            return answerRelayEndpoint(endpoint, head: head, framing: framing, principal: principal, mutualAuth: mutualAuth,
                                       startedAt: pending.startedAt, now: now, into: &actions)
        case .upstream(let upstreamKind, let upstreamHost, let upstreamPort, let https):
            (kind, host, port, httpsScheme) = (upstreamKind, upstreamHost, upstreamPort, https)
        }
        let rule: String
        switch settings.registry.decide(host: host, port: port) {
        case .allow(let allowRule): rule = allowRule
        case .deny(let denyRule, let reason):
            return refuseUnrouted(reason, target: target, rule: denyRule, principal: principal, now: now, into: &actions)
        }

        if case .tunnel = kind, let principal, let quota = settings.tunnelQuota, quotaPlace == nil {
            // Counted under NTLM's folding, as lockouts are: a helper that ignores case must
            // not give `alice`, `Alice` and `ALICE` a quota each.
            let key = NTLMUserName.comparisonKey(principal.name)
            guard quota.admit(key) else {
                return refuseUnrouted(.tunnelLimit, target: target, rule: rule, principal: principal, now: now, into: &actions)
            }
            quotaPlace = TunnelQuotaPlace(quota: quota, principal: key)
        }

        var request = Request(head: head, kind: kind, host: host, port: port, target: target, rule: rule,
                              resolved: nil, startedAt: pending.startedAt)
        request.principal = principal
        request.mutualAuth = mutualAuth
        if case .forward = kind {
            request.upstreamTLS = httpsScheme || settings.registry.rule(named: rule)?.upstreamTLS.always == true
        }

        if request.isAnsweredByRelay {
            // Checked like any forwarded request, and recorded the same way, but its final
            // recipient is the relay: nothing is resolved or connected.
            return openWithoutConnect(request, now: now, into: &actions)
        }

        if let link = upstream {
            // Only a forwarded request reuses a kept-alive upstream; a tunnel gets a fresh connection.
            if case .forward = kind, link.host == host && link.port == port, link.principal == principal,
               link.tls == UpstreamTLSTerms.of(request, in: settings.registry),
               let address = link.address,
               settings.registry.checkAll([address], port: port, allowRule: rule, localHost: settings.localHost).refusal == nil {
                var reused = request
                reused.resolved = link.resolved
                reused.onReusedLink = true
                return openWithoutConnect(reused, now: now, into: &actions)
            }
            upstream = nil
            actions.append(.closeUpstream)
        }

        open(request, openRow: .toWrite, now: now, into: &actions)
    }
}
