/// What a `ProxySession` asks its I/O driver to do, in order.
///
/// The session never touches a socket; the driver executes these actions and reports
/// what happened as `ProxySessionEvent`s. This keeps every protocol step testable byte by
/// byte without I/O.
public enum ProxySessionAction: Equatable, Sendable {
    /// Queue bytes for the client.
    case sendToClient([UInt8])
    /// Queue bytes for the connected upstream.
    case sendToUpstream([UInt8])
    /// Resolve a registered name; answer with `.resolved` or `.resolveFailed`.
    case resolve(name: String, port: UInt16)
    /// Connect to this already-checked address; answer with `.upstreamConnected` or `.upstreamConnectFailed`.
    case connect(IPAddress, port: UInt16)
    /// Write an audit row; when `awaitCommit` is true answer with `.auditCommitted` once it is durable.
    case audit(AuditEntry, awaitCommit: Bool)
    /// CONNECT is established: write `established` to the client, then relay raw bytes both ways,
    /// starting with `clientLeftover` (bytes the client sent right after its head) towards upstream.
    case startTunnel(TunnelContext, established: [UInt8], clientLeftover: [UInt8])
    /// Authenticate this request; answer with `.authFinished`. The driver keeps whatever a
    /// connection-bound scheme (NTLM, Negotiate) needs between the messages of a handshake.
    case authenticate(ProxyAuthRequest)
    /// A refusal before any request arrived (a header timeout): counted with the others from
    /// the client's source and recorded once per interval, not a row each, so a flood of
    /// slow connections cannot flood the trail. `status`: what the client was answered, nil
    /// when it was closed without an answer.
    case countRefusal(ReasonCode, status: Int?)
    /// Arm / disarm the request-head timer.
    case startHeaderTimer
    case stopHeaderTimer
    /// Close the upstream connection (it cannot be reused).
    case closeUpstream
    /// Close the upstream connection with a reset: the request it was being sent was cut.
    case resetUpstream
    /// Flush what is queued for the client, then close it. The session is finished.
    case closeClient
    /// Close the client at once with a reset, dropping what is queued: the response it was
    /// being sent was cut, and an orderly close would let it pass for complete. The session
    /// is finished.
    case resetClient
}

/// The facts of one audited decision, before the driver adds who/where/when
/// (session id, client address, listener, timestamp, principal).
public struct AuditEntry: Equatable, Sendable {
    public var event: AuditEvent
    public var decision: AuditDecision
    public var reason: ReasonCode
    public var target: String?
    public var resolved: String?
    public var rule: String?
    public var status: Int?
    public var bytesUp: Int64
    public var bytesDown: Int64
    public var durationMs: Int64?
    /// Who the request ran for (or, on an authentication refusal, who the client claimed to be).
    public var principal: String?
    /// The authentication scheme used or tried.
    public var scheme: String?
    /// Words added to the reason in the audit row (`gss-error: <GSS status>`), never a secret.
    public var reasonDetail: String?
    /// The payload's TLS (`tls_version`, `tls_cipher`, `tls_sni`, `tls_ech`): a tunnel's
    /// end-to-end TLS as its handshake showed it, or the relay's own TLS to the upstream.
    /// See `AuditRecord` for each.
    public var tlsVersion: String?
    public var tlsCipher: String?
    public var tlsSNI: String?
    public var tlsECH: Bool?
    /// The client's TLS to an HTTPS listener (`client_tls_version`, `client_tls_cipher`).
    public var clientTLSVersion: String?
    public var clientTLSCipher: String?

    public init(event: AuditEvent, decision: AuditDecision, reason: ReasonCode, target: String? = nil,
                resolved: String? = nil, rule: String? = nil, status: Int? = nil,
                bytesUp: Int64 = 0, bytesDown: Int64 = 0, durationMs: Int64? = nil,
                principal: String? = nil, scheme: String? = nil, reasonDetail: String? = nil,
                tlsVersion: String? = nil, tlsCipher: String? = nil, tlsSNI: String? = nil, tlsECH: Bool? = nil,
                clientTLSVersion: String? = nil, clientTLSCipher: String? = nil) {
        self.event = event
        self.decision = decision
        self.reason = reason
        self.target = target
        self.resolved = resolved
        self.rule = rule
        self.status = status
        self.bytesUp = bytesUp
        self.bytesDown = bytesDown
        self.durationMs = durationMs
        self.principal = principal
        self.scheme = scheme
        self.reasonDetail = reasonDetail
        self.tlsVersion = tlsVersion
        self.tlsCipher = tlsCipher
        self.tlsSNI = tlsSNI
        self.tlsECH = tlsECH
        self.clientTLSVersion = clientTLSVersion
        self.clientTLSCipher = clientTLSCipher
    }

    /// The `reason` column: the code, then any detail.
    public var reasonText: String {
        guard let reasonDetail else { return reason.rawValue }
        return "\(reason.rawValue): \(reasonDetail)"
    }
}

/// What the driver needs to audit a tunnel's close after the session has handed it off.
public struct TunnelContext: Equatable, Sendable {
    public var target: String
    public var resolved: String
    public var rule: String
    /// Monotonic nanoseconds when the request head was complete.
    public var startedAt: UInt64
    /// Who the tunnel runs for; nil without proxy authentication.
    public var principal: AuthPrincipal?
    /// The host the tunnel was opened to, normalised (what a ClientHello's server name must
    /// match); nil where none was named.
    public var host: Host?

    public init(target: String, resolved: String, rule: String, startedAt: UInt64, principal: AuthPrincipal? = nil,
                host: Host? = nil) {
        self.host = host
        self.target = target
        self.resolved = resolved
        self.rule = rule
        self.startedAt = startedAt
        self.principal = principal
    }
}
