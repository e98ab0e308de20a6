/// The HTTP/1.1 proxy protocol of one client connection, as a pure state machine.
///
/// Bytes and I/O outcomes go in (`clientBytes`, `upstreamBytes`, `handle`), actions come
/// out. One session serves every request of a keep-alive connection; a CONNECT ends it by
/// handing both sockets to a raw relay (`.startTunnel`).
///
/// Order of checks for every request: parse strictly → Host → target → framing → normalise
/// host → authenticate → registry decision → resolve once → check every address (the relay's
/// own endpoints and addresses included) → connect to a checked address → commit the audit
/// open record → only then relay a byte. A TRACE or OPTIONS whose Max-Forwards is used up
/// stops after the registry decision and is answered here once its open record is committed.
public struct ProxySession {
    /// Everything a session needs that comes from configuration.
    public struct Settings: Sendable {
        public var registry: Registry
        public var headLimits: HTTPHeadLimits
        /// The pseudonym in `Via: 1.1 <viaName>`.
        public var viaName: String
        /// Whether every request must be tied to an authenticated principal before any
        /// destination is decided or contacted.
        public var requiresAuth: Bool
        /// The version of what proofs are checked against (the user store's generation),
        /// read as a request is authenticated and again before a proof this connection
        /// remembers is trusted: one made under another version is made again, so a deleted
        /// user or a changed password does not live on in kept-alive connections.
        public var credentialsVersion: (@Sendable () -> UInt64)?
        /// Open tunnels per principal (nil: no limit). A CONNECT with a principal takes a
        /// place before its upstream is contacted; the driver takes it over
        /// (`takeTunnelQuotaPlace`) and gives it back when the connection or tunnel ends.
        public var tunnelQuota: TunnelQuota?
        /// The relay's own host: its listening endpoints are never a destination and its
        /// interface addresses are guarded like loopback (nil: not known, as in tests that
        /// do not need it).
        public var localHost: LocalHost?
        /// What an authentication refusal records instead of a claimed name that is not an
        /// account (`ProxyAuthRefusal.claimedIsAccount`), which may be a password typed into
        /// the user-name field (nil: the name itself).
        public var unknownNamePseudonym: (@Sendable (String) -> String)?

        /// Settings for one session; everything but the registry has the default a plain
        /// unauthenticated relay uses.
        public init(registry: Registry, headLimits: HTTPHeadLimits = HTTPHeadLimits(), viaName: String = "dynrelay",
                    requiresAuth: Bool = false, credentialsVersion: (@Sendable () -> UInt64)? = nil,
                    tunnelQuota: TunnelQuota? = nil, localHost: LocalHost? = nil) {
            self.registry = registry
            self.headLimits = headLimits
            self.viaName = viaName
            self.requiresAuth = requiresAuth
            self.credentialsVersion = credentialsVersion
            self.tunnelQuota = tunnelQuota
            self.localHost = localHost
        }
    }

    private enum Kind {
        case tunnel
        /// `maxForwards`: the received count of a TRACE or OPTIONS (RFC 9110 7.6.2), nil otherwise.
        case forward(pathAndQuery: String, hostHeader: String, framing: BodyFraming, maxForwards: UInt64?)
    }

    /// A request that parsed, waiting for its principal before the registry sees it.
    private struct PendingRequest {
        var head: HTTPRequestHead
        var kind: Kind
        var host: Host
        var port: UInt16
        var target: String
        var startedAt: UInt64
    }

    /// A request that passed parsing, authentication and the registry, on its way to an upstream.
    private struct Request {
        var head: HTTPRequestHead
        var kind: Kind
        var host: Host
        var port: UInt16
        var target: String
        var rule: String
        var resolved: String?
        var startedAt: UInt64
        /// Sent on an upstream connection kept alive from an earlier request.
        var onReusedLink = false
        /// Its open row is already written (a retry on a fresh connection).
        var openRecorded = false
        var principal: AuthPrincipal?
        /// Negotiate's mutual-authentication token, returned on the `200` of a CONNECT.
        var mutualAuth: String?
    }

    /// A forwarded request and its response, streaming.
    private struct Exchange {
        var request: Request
        var requestFramer: BodyFramer
        var requestDone: Bool
        var responseParser: HTTPResponseHeadParser
        var responseHeadSent = false
        var status: Int?
        var responseFramer: BodyFramer?
        var responseFraming: BodyFraming?
        /// An HTTP/1.0 client cannot read chunked: its body is sent de-chunked, ended by close.
        var dechunk = false
        /// Whether any response byte arrived (a request that got none may be retried).
        var sawResponseBytes = false
        var closeAfter: Bool
        var upstreamWantsClose = false
        var bytesUp: Int64 = 0
        var bytesDown: Int64 = 0
    }

    /// An upstream connection kept open between requests of this client connection only,
    /// with what a later request must match to reuse it.
    private struct UpstreamLink {
        var host: Host
        var port: UInt16
        var resolved: String
        /// The address connected to, checked again on reuse: a reload may deny it since.
        var address: IPAddress?
        /// Whom it was opened for: an origin may have authenticated the connection itself
        /// (NTLM to IIS), so another principal on this client connection gets a fresh one.
        var principal: AuthPrincipal?
    }

    private enum State {
        case readingHead
        /// The driver is checking credentials; client reads are paused.
        case authenticating(PendingRequest)
        case resolving(Request)
        /// The open record is being committed while the upstream connects; relaying starts
        /// when both are done. `candidates` are the checked addresses still to try.
        case opening(Request, candidates: ArraySlice<IPAddress>, committed: Bool, connected: Bool)
        /// Every address failed before the open record committed. The refusal waits for the
        /// commit's answer, so a close record is written only for an open record that is
        /// stored (a failed commit makes this a plain `internal-error` refusal).
        case failedBeforeCommit(Request, reason: ReasonCode)
        /// A TRACE or OPTIONS the relay answers itself (its `Max-Forwards` is used up): the
        /// answer waits for the open record's commit, as relaying would.
        case answering(Request)
        /// The connection was lost while the open record's commit was pending: the sockets
        /// are closed, and the commit's answer settles the record: a close record if it was
        /// stored, an `internal-error` refusal if not.
        case lostBeforeCommit(Request, reason: ReasonCode)
        case forwarding(Exchange)
        case tunnelled
        case closed
    }

    private var settings: Settings
    private var state: State = .readingHead
    private var headParser: HTTPRequestHeadParser
    /// Client bytes received but not yet consumed (a partial head, or a pipelined next request).
    private var clientBuffer: [UInt8] = []
    /// Upstream bytes of a response head not yet complete.
    private var upstreamBuffer: [UInt8] = []
    private var upstream: UpstreamLink?
    private var headTimerRunning = false
    /// Set by a connection-bound scheme (NTLM, Negotiate): later requests need no header.
    private var connectionPrincipal: AuthPrincipal?
    /// A `Proxy-Authorization` value already verified on this connection (Basic), so the
    /// slow password check runs once per connection, not once per request.
    private var verifiedCredentials: (value: String, principal: AuthPrincipal)?
    /// `credentialsVersion` when the request being authenticated asked, and when what is
    /// remembered was proved.
    private var askedUnderVersion: UInt64?
    private var rememberedUnderVersion: UInt64?
    /// The place in `tunnelQuota` this connection holds.
    private var quotaPlace: TunnelQuotaPlace?

    public init(settings: Settings) {
        self.settings = settings
        self.headParser = HTTPRequestHeadParser(limits: settings.headLimits)
    }

    /// The first actions of a new connection: the head timer runs from accept, so a client
    /// that connects and sends nothing is dropped after the header timeout, not the idle one.
    public mutating func start() -> [ProxySessionAction] {
        headTimerRunning = true
        return [.startHeaderTimer]
    }

    /// A reload: requests decided from now on use `registry`; anything already decided (an
    /// open tunnel, a request in flight) keeps the decision it got.
    public mutating func useRegistry(_ registry: Registry) {
        settings.registry = registry
    }

    /// A reload: proxy authentication on or off, and the new credentials' version, for
    /// requests decided from now on. What the connection proved under the old
    /// authenticator is forgotten: its version cannot be compared with the new one's.
    public mutating func useAuth(required: Bool, credentialsVersion: (@Sendable () -> UInt64)?) {
        settings.requiresAuth = required
        settings.credentialsVersion = credentialsVersion
        forgetAuthentication()
        // A proof asked for under the old authenticator must not be remembered as made
        // under the new one (whose versions count afresh).
        askedUnderVersion = nil
    }

    /// Hands the tunnel place this connection holds (if any) to the driver, for whatever
    /// runs the tunnel to give back when it ends.
    public mutating func takeTunnelQuotaPlace() -> TunnelQuotaPlace? {
        defer { quotaPlace = nil }
        return quotaPlace
    }

    /// Whether later requests may pass on what this connection already proved (a Basic
    /// header verified here, an NTLM or Negotiate principal).
    public var remembersAuthentication: Bool {
        connectionPrincipal != nil || verifiedCredentials != nil
    }

    /// Makes the next request prove itself again.
    public mutating func forgetAuthentication() {
        connectionPrincipal = nil
        verifiedCredentials = nil
        rememberedUnderVersion = nil
    }

    // MARK: Flow control the driver reads after every call

    /// True while the session can take client bytes; the driver pauses reading otherwise,
    /// so nothing is buffered without bound.
    public var wantsClientBytes: Bool {
        switch state {
        case .readingHead: return true
        case .forwarding(let exchange): return !exchange.requestDone
        default: return false
        }
    }

    /// True while upstream bytes are expected (a response, or the EOF of an idle kept-alive link).
    public var wantsUpstreamBytes: Bool {
        switch state {
        case .forwarding: return true
        case .readingHead: return upstream != nil
        default: return false
        }
    }

    /// True once the connection has nothing more to do: closed, handed off as a tunnel, or
    /// closed with only its audit row owed (`lostBeforeCommit`: the commit's answer settles it).
    public var isFinished: Bool {
        switch state {
        case .closed, .tunnelled, .lostBeforeCommit: return true
        default: return false
        }
    }

    // MARK: Inputs

    /// Bytes from the client.
    public mutating func clientBytes(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> [ProxySessionAction] {
        var actions: [ProxySessionAction] = []
        switch state {
        case .readingHead:
            clientBuffer.append(contentsOf: bytes)
            processHead(now: now, into: &actions)
        case .forwarding(var exchange) where !exchange.requestDone:
            forwardRequestBody(bytes, exchange: &exchange, now: now, into: &actions)
        case .closed, .tunnelled:
            break
        default:
            // The driver pauses reads when `wantsClientBytes` is false; at most one read lands here.
            clientBuffer.append(contentsOf: bytes)
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
        default:
            break
        }
        return actions
    }

    /// Every other outcome of an action.
    public mutating func handle(_ event: ProxySessionEvent, now: UInt64) -> [ProxySessionAction] {
        var actions: [ProxySessionAction] = []
        if case .authFinished(let outcome) = event {
            // Matched apart from the (state, event) switch below, which copies the whole state
            // and everything it holds: the authentication round is on every authenticated
            // request's path.
            if case .authenticating(let pending) = state {
                authFinished(outcome, pending: pending, now: now, into: &actions)
            }
            return actions
        }
        switch (state, event) {
        case (.resolving(let request), .resolved(let addresses)):
            checkResolved(addresses, request: request, now: now, into: &actions)
        case (.resolving(let request), .resolveFailed):
            refuse(.resolveFailed, request: request, now: now, into: &actions)

        case (.opening(var request, let candidates, let committed, false), .upstreamConnectFailed(let reason)):
            let rest = candidates.dropFirst()
            if let next = rest.first {
                request.resolved = Endpoint.text(next, request.port)
                state = .opening(request, candidates: rest, committed: committed, connected: false)
                actions.append(.connect(next, port: request.port))
            } else if committed {
                failOpened(request, reason: reason, now: now, into: &actions)
            } else {
                state = .failedBeforeCommit(request, reason: reason)
            }
        case (.opening(let request, let candidates, let committed, false), .upstreamConnected):
            upstream = UpstreamLink(host: request.host, port: request.port, resolved: request.resolved ?? "",
                                    address: candidates.first, principal: request.principal)
            if committed {
                startRelaying(request, now: now, into: &actions)
            } else {
                state = .opening(request, candidates: candidates, committed: false, connected: true)
            }
        case (.opening(let request, let candidates, false, let connected), .auditCommitted):
            if connected {
                startRelaying(request, now: now, into: &actions)
            } else {
                state = .opening(request, candidates: candidates, committed: true, connected: false)
            }
        case (.opening(let request, _, false, _), .auditFailed),
             (.failedBeforeCommit(let request, _), .auditFailed):
            // Fail closed: without its open record nothing is relayed.
            refuse(.internalError, request: request, now: now, into: &actions)
        case (.failedBeforeCommit(let request, let reason), .auditCommitted):
            failOpened(request, reason: reason, now: now, into: &actions)
        case (.answering(let request), .auditCommitted):
            answerLocally(request, now: now, into: &actions)
        case (.answering(let request), .auditFailed):
            refuse(.internalError, request: request, now: now, into: &actions)

        case (.forwarding(var exchange), .upstreamEOF):
            upstreamEnded(&exchange, reason: .upstreamClosed, now: now, into: &actions)
        case (.forwarding(var exchange), .upstreamFailed):
            upstreamEnded(&exchange, reason: .upstreamReset, now: now, into: &actions)
        case (.forwarding(let exchange), .clientEOF):
            if exchange.requestDone {
                // A client may half-close after its request; finish the response, then close.
                var finishing = exchange
                finishing.closeAfter = true
                state = .forwarding(finishing)
            } else {
                actions.append(.audit(closeEntry(exchange, reason: .clientClosed, now: now), awaitCommit: false))
                closeAll(into: &actions, cutting: exchange)
            }

        case (.forwarding(let exchange), .connectionLost(let reason)):
            actions.append(.audit(closeEntry(exchange, reason: reason, now: now), awaitCommit: false))
            closeAll(into: &actions, cutting: exchange)
        case (.opening(let request, _, false, _), .connectionLost(let reason)),
             (.answering(let request), .connectionLost(let reason)),
             (.failedBeforeCommit(let request, let reason), .connectionLost):
            // A close row only for a stored open row: it waits for the commit's answer. An
            // attempt whose every connect had failed keeps that failure as its reason.
            closeAll(into: &actions)
            state = .lostBeforeCommit(request, reason: reason)
        case (.lostBeforeCommit(let request, let reason), .auditCommitted):
            state = .closed
            actions.append(.audit(failureCloseEntry(request, reason: reason, status: nil, now: now), awaitCommit: false))
        case (.lostBeforeCommit(let request, _), .auditFailed):
            // The allowed decision was never stored: the attempt is recorded as refused.
            state = .closed
            actions.append(.audit(unopenedEntry(request, reason: .internalError, now: now), awaitCommit: false))
        case (.opening(let request, _, _, _), .connectionLost(let reason)),
             (.resolving(let request), .connectionLost(let reason)) where request.openRecorded:
            // The open row is stored: it gets its close row now.
            actions.append(.audit(failureCloseEntry(request, reason: reason, status: nil, now: now), awaitCommit: false))
            closeAll(into: &actions)
        case (.resolving(let request), .connectionLost(let reason)):
            // Allowed by name, lost before its addresses were checked: recorded, as a forward's is.
            actions.append(.audit(unopenedEntry(request, reason: reason, now: now), awaitCommit: false))
            closeAll(into: &actions)
        case (_, .connectionLost):
            if !isFinished { closeAll(into: &actions) }

        case (.readingHead, .upstreamEOF), (.readingHead, .upstreamFailed):
            if upstream != nil {
                upstream = nil
                actions.append(.closeUpstream)
            }
        case (.readingHead, .clientEOF):
            // Nothing was asked (or only part of a head): no decision to audit.
            closeAll(into: &actions)
        case (.readingHead, .headerTimeout):
            // No request arrived: counted with the source's other refusals of this kind. A
            // client that sent part of a head is told why; one that sent nothing is closed.
            headTimerRunning = false
            let answered = !clientBuffer.isEmpty
            actions.append(.countRefusal(.headerTimeout, status: answered ? ReasonCode.headerTimeout.refusalStatus : nil))
            if answered {
                actions.append(.sendToClient(ProxyResponses.refusal(.headerTimeout)))
            }
            closeAll(into: &actions)

        default:
            // Late outcomes of an abandoned step (a timer racing a close) change nothing.
            break
        }
        return actions
    }

    // MARK: Request head

    private mutating func processHead(now: UInt64, into actions: inout [ProxySessionAction]) {
        let result = clientBuffer.withUnsafeBytes { headParser.parse($0) }
        switch result {
        case .needMore:
            if !headTimerRunning && !clientBuffer.isEmpty {
                headTimerRunning = true
                actions.append(.startHeaderTimer)
            }
        case .invalid(let reason):
            refuse(reason, request: nil, now: now, into: &actions)
        case .complete(let head, let headLength):
            if headTimerRunning {
                headTimerRunning = false
                actions.append(.stopHeaderTimer)
            }
            clientBuffer.removeFirst(headLength)
            headParser.reset()
            route(head, now: now, into: &actions)
        }
    }

    private mutating func route(_ head: HTTPRequestHead, now: UInt64, into actions: inout [ProxySessionAction]) {
        // RFC 9112 3.2 asks every HTTP/1.1 request for Host, CONNECT included (RFC 9110 7.2
        // exempts only HTTP/2's :authority); two of them the parser refused already.
        if head.version == .http1_1 && !head.headers.contains("host") {
            return refuse(.missingHost, request: nil, now: now, into: &actions)
        }
        let parsedTarget: RequestTarget
        switch RequestTarget.parse(method: head.method, target: head.target) {
        case .success(let target): parsedTarget = target
        case .failure(let reason): return refuse(reason, request: nil, now: now, into: &actions)
        }

        let kind: Kind
        let rawHost: RawHost
        let port: UInt16
        switch parsedTarget {
        case .authority(let host, let authorityPort) where head.method == "CONNECT":
            // A CONNECT body has no defined meaning: are those bytes a body or tunnel payload?
            // Refused, except for one `Content-Length: 0`, which says there is none (Java and
            // mobile HTTP stacks send it on every request).
            let lengths = head.headers.values("content-length")
            if head.headers.contains("transfer-encoding") || !(lengths.isEmpty || lengths == ["0"]) {
                return refuse(.ambiguousFraming, request: nil, now: now, into: &actions)
            }
            kind = .tunnel
            rawHost = host
            port = authorityPort
        case .absolute(let scheme, let host, let absolutePort, let pathAndQuery) where head.method != "CONNECT":
            guard scheme == "http" else {
                return refuse(.unsupportedScheme, request: nil, now: now, into: &actions)
            }
            let framing: BodyFraming
            switch MessageFraming.request(head) {
            case .success(let value): framing = value
            case .failure(let reason): return refuse(reason, request: nil, now: now, into: &actions)
            }
            var maxForwards: UInt64?
            if MaxForwards.applies(to: head.method) {
                switch MaxForwards.parse(head.headers) {
                case .success(let value): maxForwards = value
                case .failure(let reason): return refuse(reason, request: nil, now: now, into: &actions)
                }
            }
            let hostHeader = ForwardRewriter.hostHeaderValue(scheme: scheme, host: host, port: absolutePort)
            kind = .forward(pathAndQuery: pathAndQuery, hostHeader: hostHeader, framing: framing, maxForwards: maxForwards)
            rawHost = host
            port = absolutePort
        case .origin, .asterisk:
            return refuse(.notAProxyRequest, request: nil, now: now, into: &actions)
        default:
            return refuse(.badTarget, request: nil, now: now, into: &actions)
        }

        let host: Host
        switch HostNormalizer.normalize(rawHost.text, bracketed: rawHost.bracketed) {
        case .success(let value): host = value
        case .failure(let error):
            let target = rawHost.bracketed ? "[\(rawHost.text)]:\(port)" : "\(rawHost.text):\(port)"
            return refuseUnrouted(error.reason, target: target, rule: nil, now: now, into: &actions)
        }
        let pending = PendingRequest(head: head, kind: kind, host: host, port: port, target: Endpoint.text(host, port),
                                     startedAt: now)
        guard settings.requiresAuth else {
            return decide(pending, principal: nil, mutualAuth: nil, now: now, into: &actions)
        }
        // Authentication comes before the registry: an unauthenticated client learns
        // nothing about which destinations exist.
        let offered = head.headers.values("proxy-authorization")
        if offered.count > 1 {
            return refuseUnrouted(.badCredentials, target: pending.target, rule: nil, now: now, into: &actions)
        }
        let version = settings.credentialsVersion?()
        if remembersAuthentication, version != rememberedUnderVersion {
            forgetAuthentication()
        }
        if let value = offered.first, let verified = verifiedCredentials, verified.value == value {
            return decide(pending, principal: verified.principal, mutualAuth: nil, now: now, into: &actions)
        }
        if offered.isEmpty, let principal = connectionPrincipal {
            return decide(pending, principal: principal, mutualAuth: nil, now: now, into: &actions)
        }
        state = .authenticating(pending)
        askedUnderVersion = version
        var originForm: String?
        if case .forward(let pathAndQuery, _, _, _) = kind { originForm = pathAndQuery }
        actions.append(.authenticate(ProxyAuthRequest(authorization: offered.first, method: head.method,
                                                      target: head.target, originForm: originForm)))
    }

    /// The answer to `.authenticate`: a granted request goes on to the registry decision.
    private mutating func authFinished(_ outcome: ProxyAuthOutcome, pending: PendingRequest, now: UInt64,
                                       into actions: inout [ProxySessionAction]) {
        switch outcome {
        case .granted(let principal, let scope, let mutualAuth):
            switch scope {
            case .connection:
                connectionPrincipal = principal
                verifiedCredentials = nil
                rememberedUnderVersion = askedUnderVersion
            case .sameCredentials:
                if let value = pending.head.headers.first("proxy-authorization") {
                    verifiedCredentials = (value, principal)
                    rememberedUnderVersion = askedUnderVersion
                }
            case .request:
                break
            }
            decide(pending, principal: principal, mutualAuth: mutualAuth, now: now, into: &actions)
        case .refused(let refusal):
            refuseAuthentication(refusal, pending: pending, now: now, into: &actions)
        }
    }

    /// An authentication refusal: a 407 keeps the connection when the client can send its
    /// next attempt on it (no body left unread, no close asked for); anything else closes.
    private mutating func refuseAuthentication(_ refusal: ProxyAuthRefusal, pending: PendingRequest, now: UInt64,
                                               into actions: inout [ProxySessionAction]) {
        var bodiless = true
        if case .forward(_, _, let framing, _) = pending.kind, framing != .none { bodiless = false }
        let keepAlive = refusal.status == 407 && bodiless
            && !ForwardRewriter.wantsClose(version: pending.head.version, headers: pending.head.headers)
        var claimed = refusal.claimedPrincipal
        if !refusal.claimedIsAccount, let name = claimed, let pseudonym = settings.unknownNamePseudonym {
            // Not known to be an account: it may be a password typed in the wrong field.
            claimed = pseudonym(name)
        }
        actions.append(.audit(AuditEntry(event: .refused, decision: .deny, reason: refusal.reason, target: pending.target,
                                         status: refusal.status,
                                         durationMs: ProxySessionTiming.milliseconds(from: pending.startedAt, to: now),
                                         principal: claimed, scheme: refusal.scheme,
                                         reasonDetail: refusal.detail),
                              awaitCommit: false))
        actions.append(.sendToClient(ProxyResponses.authRefusal(refusal.reason, status: refusal.status,
                                                                challenges: refusal.challenges, keepAlive: keepAlive)))
        // A refused attempt ends what the connection had proved: the client offered new
        // credentials (or began a new handshake) and they did not hold.
        forgetAuthentication()
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

    /// The registry decision for an authenticated (or auth-free) request, then the upstream.
    private mutating func decide(_ pending: PendingRequest, principal: AuthPrincipal?, mutualAuth: String?, now: UInt64,
                                 into actions: inout [ProxySessionAction]) {
        let (head, kind, host, port, target) = (pending.head, pending.kind, pending.host, pending.port, pending.target)
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

        if case .forward(_, _, _, maxForwards: 0?) = kind {
            // Checked like any forwarded request, and recorded the same way, but its final
            // recipient is the relay: nothing is resolved or connected.
            state = .answering(request)
            return actions.append(openRecord(request))
        }

        if let link = upstream {
            // Only a forwarded request reuses a kept-alive upstream; a tunnel gets a fresh connection.
            if case .forward = kind, link.host == host && link.port == port, link.principal == principal,
               let address = link.address,
               settings.registry.checkAll([address], port: port, allowRule: rule, localHost: settings.localHost).refusal == nil {
                var reused = request
                reused.resolved = link.resolved
                reused.onReusedLink = true
                state = .opening(reused, candidates: [], committed: false, connected: true)
                return actions.append(openRecord(reused))
            }
            upstream = nil
            actions.append(.closeUpstream)
        }

        reachUpstream(request, now: now, into: &actions)
    }

    /// Resolves (names) or checks (literals) the target, then opens a connection.
    private mutating func reachUpstream(_ request: Request, now: UInt64, into actions: inout [ProxySessionAction]) {
        switch request.host {
        case .name(let name):
            state = .resolving(request)
            actions.append(.resolve(name: name, port: request.port))
        case .ipv4(let address):
            checkResolved([.v4(address)], request: request, now: now, into: &actions)
        case .ipv6(let address):
            checkResolved([.v6(address)], request: request, now: now, into: &actions)
        }
    }

    private mutating func checkResolved(_ addresses: [IPAddress], request: Request, now: UInt64,
                                        into actions: inout [ProxySessionAction]) {
        let check = settings.registry.checkAll(addresses, port: request.port, allowRule: request.rule,
                                              localHost: settings.localHost)
        if let refusal = check.refusal {
            var refused = request
            refused.resolved = Endpoint.text(refusal.address, request.port)
            refused.rule = refusal.rule ?? request.rule
            return refuse(refusal.reason, request: refused, now: now, into: &actions)
        }
        guard let first = check.ordered.first else {
            return refuse(.resolveFailed, request: request, now: now, into: &actions)
        }
        var opening = request
        opening.resolved = Endpoint.text(first, request.port)
        state = .opening(opening, candidates: check.ordered[...], committed: request.openRecorded, connected: false)
        // The decision is recorded while the upstream connects: both must finish before a
        // byte is relayed, and neither waits for the other.
        if !request.openRecorded {
            actions.append(openRecord(opening))
        }
        actions.append(.connect(first, port: request.port))
    }

    /// The open row: the allowed decision, naming the first checked address to be tried.
    private func openRecord(_ request: Request) -> ProxySessionAction {
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

    /// Every address failed after the open row was written: its close row carries why, and
    /// the client gets the refusal.
    private mutating func failOpened(_ request: Request, reason: ReasonCode, now: UInt64,
                                     into actions: inout [ProxySessionAction]) {
        let status = reason.refusalStatus ?? 502
        actions.append(.audit(failureCloseEntry(request, reason: reason, status: status, now: now), awaitCommit: false))
        actions.append(.sendToClient(ProxyResponses.refusal(reason, status: status)))
        closeAll(into: &actions)
    }

    /// The row of an attempt that ended with no open row stored and no client left to answer.
    private func unopenedEntry(_ request: Request, reason: ReasonCode, now: UInt64) -> AuditEntry {
        AuditEntry(event: .refused, decision: .deny, reason: reason, target: request.target,
                   resolved: request.resolved, rule: request.rule,
                   durationMs: ProxySessionTiming.milliseconds(from: request.startedAt, to: now),
                   principal: request.principal?.name, scheme: request.principal?.scheme)
    }

    /// The close row of an opened request that never relayed anything.
    private func failureCloseEntry(_ request: Request, reason: ReasonCode, status: Int?, now: UInt64) -> AuditEntry {
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

    private mutating func startRelaying(_ request: Request, now: UInt64, into actions: inout [ProxySessionAction]) {
        switch request.kind {
        case .tunnel:
            state = .tunnelled
            upstream = nil
            let context = TunnelContext(target: request.target, resolved: request.resolved ?? "",
                                        rule: request.rule, startedAt: request.startedAt, principal: request.principal)
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
        actions.append(.audit(AuditEntry(event: .requestClose, decision: .allow, reason: .answeredByRelay, target: request.target,
                                         rule: request.rule, status: 200, bytesDown: Int64(answer.count),
                                         durationMs: ProxySessionTiming.milliseconds(from: request.startedAt, to: now),
                                         principal: request.principal?.name, scheme: request.principal?.scheme),
                              awaitCommit: false))
        if closeAfter { return closeAll(into: &actions) }
        state = .readingHead
        if !clientBuffer.isEmpty {
            processHead(now: now, into: &actions)
        }
    }

    // MARK: Forwarding

    private mutating func forwardRequestBody(_ bytes: UnsafeRawBufferPointer, exchange: inout Exchange,
                                             now: UInt64, into actions: inout [ProxySessionAction]) {
        switch exchange.requestFramer.consume(bytes) {
        case .body(let count):
            sendUp(bytes, count: count, exchange: &exchange, into: &actions)
            state = .forwarding(exchange)
        case .done(let count):
            sendUp(bytes, count: count, exchange: &exchange, into: &actions)
            exchange.requestDone = true
            // Whatever follows is the next (pipelined) request; it waits for this response.
            clientBuffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[count...]))
            state = .forwarding(exchange)
        case .invalid(let reason):
            // The close row carries the status the client got: this refusal's, or the
            // response head's when one went out already (it cannot be replaced then).
            if !exchange.responseHeadSent {
                let status = reason.refusalStatus ?? 400
                let refusal = ProxyResponses.refusal(reason, status: status)
                exchange.status = status
                exchange.bytesDown += Int64(refusal.count)
                actions.append(.sendToClient(refusal))
            }
            actions.append(.audit(closeEntry(exchange, reason: reason, now: now), awaitCommit: false))
            closeAll(into: &actions, cutting: exchange)
        }
    }

    private func sendUp(_ bytes: UnsafeRawBufferPointer, count: Int, exchange: inout Exchange,
                        into actions: inout [ProxySessionAction]) {
        guard count > 0 else { return }
        exchange.bytesUp += Int64(count)
        actions.append(.sendToUpstream(Array(UnsafeRawBufferPointer(rebasing: bytes[..<count]))))
    }

    private mutating func forwardResponse(_ bytes: UnsafeRawBufferPointer, exchange: inout Exchange, now: UInt64,
                                          into actions: inout [ProxySessionAction]) {
        if !bytes.isEmpty {
            exchange.sawResponseBytes = true
        }
        if exchange.responseFramer == nil {
            upstreamBuffer.append(contentsOf: bytes)
            while exchange.responseFramer == nil {
                let result = upstreamBuffer.withUnsafeBytes { exchange.responseParser.parse($0) }
                switch result {
                case .needMore:
                    state = .forwarding(exchange)
                    return
                case .invalid:
                    return failUpstream(&exchange, reason: .badUpstreamResponse, now: now, into: &actions)
                case .complete(let head, let headLength):
                    upstreamBuffer.removeFirst(headLength)
                    exchange.responseParser.reset()
                    if !acceptResponseHead(head, exchange: &exchange, now: now, into: &actions) { return }
                }
            }
            let body = upstreamBuffer
            upstreamBuffer = []
            body.withUnsafeBytes { forwardResponseBody($0, exchange: &exchange, now: now, into: &actions) }
        } else {
            forwardResponseBody(bytes, exchange: &exchange, now: now, into: &actions)
        }
    }

    /// Sends a response head on; returns false when the exchange ended because of it.
    private mutating func acceptResponseHead(_ head: HTTPResponseHead, exchange: inout Exchange, now: UInt64,
                                             into actions: inout [ProxySessionAction]) -> Bool {
        if head.status == 101 {
            // Upgrade is hop-by-hop and was stripped from the request; a 101 is a protocol violation.
            failUpstream(&exchange, reason: .badUpstreamResponse, now: now, into: &actions)
            return false
        }
        if (100..<200).contains(head.status) {
            // HTTP/1.0 defined no 1xx (RFC 9110 15.2): its client would take one for the answer.
            if exchange.request.head.version == .http1_0 { return true }
            let interim = ForwardRewriter.clientResponse(Self.withoutBodyFraming(head), viaName: settings.viaName,
                                                         closeAfter: false)
            exchange.bytesDown += Int64(interim.count)
            actions.append(.sendToClient(interim))
            return true
        }
        let framing: BodyFraming
        switch MessageFraming.response(head, requestMethod: exchange.request.head.method) {
        case .success(let value): framing = value
        case .failure:
            failUpstream(&exchange, reason: .badUpstreamResponse, now: now, into: &actions)
            return false
        }
        if exchange.request.head.version == .http1_0, framing != .none, head.headers.contains("transfer-encoding"),
           !MessageFraming.isChunkedOnly(head.headers) {
            // An HTTP/1.0 client knows no transfer coding (RFC 9112 6.1): de-chunking would
            // hand it `gzip` bytes labelled as nothing.
            failUpstream(&exchange, reason: .badUpstreamResponse, now: now, into: &actions)
            return false
        }
        exchange.upstreamWantsClose = ForwardRewriter.wantsClose(version: head.version, headers: head.headers)
            || framing == .untilClose
        var clientHead = head.status == 204 ? Self.withoutBodyFraming(head) : head
        if framing == .chunked && exchange.request.head.version == .http1_0 {
            // The relay must speak HTTP/1.1 upstream, so a chunked answer can come back to a
            // 1.0 client that cannot read chunked: send it the payload, delimited by close.
            exchange.dechunk = true
            clientHead.headers.remove("transfer-encoding")
        }
        if framing == .untilClose || !exchange.requestDone || exchange.dechunk {
            exchange.closeAfter = true
        }
        let rewritten = ForwardRewriter.clientResponse(clientHead, viaName: settings.viaName, closeAfter: exchange.closeAfter)
        exchange.bytesDown += Int64(rewritten.count)
        exchange.status = head.status
        exchange.responseHeadSent = true
        exchange.responseFramer = BodyFramer(framing)
        exchange.responseFraming = framing
        actions.append(.sendToClient(rewritten))
        return true
    }

    /// A 1xx or 204 head without Content-Length and Transfer-Encoding, which RFC 9110 8.6
    /// and RFC 9112 6.1 forbid there: such a response has no body, and a client that believed
    /// either field would read the next response as this one's body.
    private static func withoutBodyFraming(_ head: HTTPResponseHead) -> HTTPResponseHead {
        var stripped = head
        stripped.headers.remove("content-length")
        stripped.headers.remove("transfer-encoding")
        return stripped
    }

    private mutating func forwardResponseBody(_ bytes: UnsafeRawBufferPointer, exchange: inout Exchange, now: UInt64,
                                              into actions: inout [ProxySessionAction]) {
        guard var framer = exchange.responseFramer else { return }
        let progress: BodyProgress
        var payload: [UInt8] = []
        if framer.isComplete {
            progress = .done(0)
        } else if exchange.dechunk {
            progress = framer.consume(bytes) { range in
                payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[range]))
            }
        } else {
            progress = framer.consume(bytes)
        }
        exchange.responseFramer = framer
        switch progress {
        case .body(let count):
            sendDown(bytes, count: count, payload: exchange.dechunk ? payload : nil, exchange: &exchange, into: &actions)
            state = .forwarding(exchange)
        case .done(let count):
            sendDown(bytes, count: count, payload: exchange.dechunk ? payload : nil, exchange: &exchange, into: &actions)
            if count < bytes.count {
                // Bytes after a complete response: the upstream is out of step; never reuse it.
                exchange.upstreamWantsClose = true
            }
            finishExchange(exchange, now: now, into: &actions)
        case .invalid:
            failUpstream(&exchange, reason: .badUpstreamResponse, now: now, into: &actions)
        }
    }

    /// Sends the first `count` bytes on, or only `payload` (their de-chunked content) when given.
    private func sendDown(_ bytes: UnsafeRawBufferPointer, count: Int, payload: [UInt8]?, exchange: inout Exchange,
                          into actions: inout [ProxySessionAction]) {
        let out = payload ?? Array(UnsafeRawBufferPointer(rebasing: bytes[..<count]))
        guard !out.isEmpty else { return }
        exchange.bytesDown += Int64(out.count)
        actions.append(.sendToClient(out))
    }

    private mutating func finishExchange(_ exchange: Exchange, now: UInt64, into actions: inout [ProxySessionAction]) {
        actions.append(.audit(closeEntry(exchange, reason: .completed, now: now), awaitCommit: false))
        if exchange.closeAfter || !exchange.requestDone {
            return closeAll(into: &actions)
        }
        if exchange.upstreamWantsClose {
            upstream = nil
            actions.append(.closeUpstream)
        }
        state = .readingHead
        if !clientBuffer.isEmpty {
            processHead(now: now, into: &actions)
        }
    }

    /// The upstream ended or broke mid-exchange.
    private mutating func upstreamEnded(_ exchange: inout Exchange, reason: ReasonCode, now: UInt64,
                                        into actions: inout [ProxySessionAction]) {
        if reason == .upstreamClosed, exchange.responseFraming == .untilClose {
            // A body framed by close is complete exactly when the upstream closes.
            exchange.closeAfter = true
            return finishExchange(exchange, now: now, into: &actions)
        }
        if Self.mayRetryOnAFreshConnection(exchange) {
            // A kept-alive upstream closed as this request crossed its close (servers drop
            // idle connections whenever they like). Nothing of a response came back and the
            // request is safe to repeat, so it goes again, once, on a fresh connection,
            // under its open row.
            upstream = nil
            actions.append(.closeUpstream)
            var retry = exchange.request
            retry.onReusedLink = false
            retry.openRecorded = true
            return reachUpstream(retry, now: now, into: &actions)
        }
        failUpstream(&exchange, reason: reason, now: now, into: &actions)
    }

    /// Only a bodiless request with a safe method (RFC 9110 9.2.1), sent on a reused
    /// connection, that got no response byte at all.
    private static func mayRetryOnAFreshConnection(_ exchange: Exchange) -> Bool {
        guard exchange.request.onReusedLink, !exchange.sawResponseBytes,
              case .forward(_, _, .none, _) = exchange.request.kind else { return false }
        return ["GET", "HEAD", "OPTIONS", "TRACE"].contains(exchange.request.head.method)
    }

    private mutating func failUpstream(_ exchange: inout Exchange, reason: ReasonCode, now: UInt64,
                                       into actions: inout [ProxySessionAction]) {
        if !exchange.responseHeadSent {
            let refusal = ProxyResponses.refusal(reason, status: 502)
            exchange.status = 502
            exchange.bytesDown += Int64(refusal.count)
            actions.append(.sendToClient(refusal))
        }
        actions.append(.audit(closeEntry(exchange, reason: reason, now: now), awaitCommit: false))
        closeAll(into: &actions, cutting: exchange)
    }

    // MARK: Endings

    private func closeEntry(_ exchange: Exchange, reason: ReasonCode, now: UInt64) -> AuditEntry {
        let request = exchange.request
        return AuditEntry(event: .requestClose, decision: .allow, reason: reason, target: request.target,
                          resolved: request.resolved, rule: request.rule, status: exchange.status,
                          bytesUp: exchange.bytesUp, bytesDown: exchange.bytesDown,
                          durationMs: ProxySessionTiming.milliseconds(from: request.startedAt, to: now),
                          principal: request.principal?.name, scheme: request.principal?.scheme)
    }

    /// Refuses a request that got as far as `request` (nil: refused while parsing).
    private mutating func refuse(_ reason: ReasonCode, request: Request?, now: UInt64,
                                 into actions: inout [ProxySessionAction]) {
        if let request, request.openRecorded {
            // A retry that fails: its open row gets the close row, not a second decision.
            return failOpened(request, reason: reason, now: now, into: &actions)
        }
        refuseUnrouted(reason, target: request?.target, rule: request?.rule, resolved: request?.resolved,
                       durationMs: request.map { ProxySessionTiming.milliseconds(from: $0.startedAt, to: now) },
                       principal: request?.principal, now: now, into: &actions)
    }

    private mutating func refuseUnrouted(_ reason: ReasonCode, target: String?, rule: String?, resolved: String? = nil,
                                         durationMs: Int64? = nil, principal: AuthPrincipal? = nil, now: UInt64,
                                         into actions: inout [ProxySessionAction]) {
        let status = reason.refusalStatus ?? 400
        actions.append(.audit(AuditEntry(event: .refused, decision: .deny, reason: reason, target: target,
                                         resolved: resolved, rule: rule, status: status, durationMs: durationMs,
                                         principal: principal?.name, scheme: principal?.scheme),
                              awaitCommit: false))
        actions.append(.sendToClient(ProxyResponses.refusal(reason, status: status)))
        closeAll(into: &actions)
    }

    /// Ends the connection. `cutting` is an exchange abandoned before it finished: a side
    /// whose message it leaves incomplete is reset, never closed in order, because a FIN
    /// after part of a body reads as its end when the body is delimited by close (and as a
    /// clean end of the connection otherwise): the response once its head went out, the
    /// request while its body was still coming.
    private mutating func closeAll(into actions: inout [ProxySessionAction], cutting exchange: Exchange? = nil) {
        if headTimerRunning {
            headTimerRunning = false
            actions.append(.stopHeaderTimer)
        }
        if upstream != nil || isUpstreamInFlight {
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

    private var isUpstreamInFlight: Bool {
        switch state {
        case .opening, .forwarding: return true
        default: return false
        }
    }
}
