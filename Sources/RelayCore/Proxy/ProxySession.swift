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
///
/// The seams, one file each: routing a request to its destination
/// (`ProxySession+Routing.swift`), what the connection has proved
/// (`ProxySession+Authentication.swift`, `ConnectionProofs.swift`), opening the upstream
/// (`ProxySession+Opening.swift` over `UpstreamOpening`), the forwarded exchange
/// (`ProxySession+Forwarding.swift`), the relay's own endpoints
/// (`ProxySession+RelayEndpoints.swift`), the audit rows (`ProxySession+AuditRows.swift`), and
/// which event is expected in which state (`ProxySession+Events.swift`).
public struct ProxySession {
    var settings: Settings
    var state: State = .readingHead
    var headParser: HTTPRequestHeadParser
    /// Client bytes received but not yet consumed (a partial head, or a pipelined next request).
    var clientBuffer: [UInt8] = []
    /// Upstream bytes of a response head not yet complete.
    var upstreamBuffer: [UInt8] = []
    var upstream: UpstreamLink?
    var headTimerRunning = false
    var proofs = ConnectionProofs()
    /// The place in `tunnelQuota` this connection holds.
    var quotaPlace: TunnelQuotaPlace?

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
        // A proof asked for under the old authenticator must not be remembered as made
        // under the new one either (whose versions count afresh).
        proofs = ConnectionProofs()
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
        proofs.remembersAny
    }

    /// Makes the next request prove itself again.
    public mutating func forgetAuthentication() {
        proofs.forget()
    }

    // MARK: Flow control the driver reads after every call

    /// True while the session can take client bytes; the driver pauses reading otherwise,
    /// so nothing is buffered without bound.
    public var wantsClientBytes: Bool {
        switch state {
        case .readingHead: return true
        case .forwarding(let exchange): return !exchange.requestDone
        case .authenticating, .opening, .tunnelled, .closed: return false
        }
    }

    /// True while upstream bytes are expected (a response, or the EOF of an idle kept-alive
    /// link). The driver reads the upstream only while this is true.
    public var wantsUpstreamBytes: Bool {
        switch state {
        case .forwarding: return true
        case .readingHead: return upstream != nil
        case .authenticating, .opening, .tunnelled, .closed: return false
        }
    }

    /// The upstream connect under way must be followed by the relay's own TLS handshake to
    /// this host (its SNI when a name, and the name or address the certificate must carry)
    /// under this rule's upstream TLS policy: the driver asks when the session says
    /// `.connect`, and reports a failed handshake as `.upstreamConnectFailed` with its
    /// reason. nil for a plain connection.
    public var upstreamTLSServer: (host: Host, rule: String)? {
        guard case .opening(let request, _) = state, request.upstreamTLS else { return nil }
        return (request.host, request.rule)
    }

    /// True once the connection has nothing more to do: closed, handed off as a tunnel, or
    /// closed with only its audit row owed (the open row's commit answer settles it).
    public var isFinished: Bool {
        switch state {
        case .closed, .tunnelled: return true
        case .opening(_, let opening): return opening.isAbandoned
        case .readingHead, .authenticating, .forwarding: return false
        }
    }
}
