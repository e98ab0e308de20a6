/// What happened to a connection, as written in the `event` column of the audit trail.
///
/// Raw values are stored as they are in the trail's `event` column, where reviewers grep
/// and query them: they never change once shipped.
public enum AuditEvent: String, Sendable, CaseIterable {
    case tunnelOpen = "tunnel-open"
    case tunnelClose = "tunnel-close"
    case requestOpen = "request-open"
    case requestClose = "request-close"
    case forwardOpen = "forward-open"
    case forwardClose = "forward-close"
    case refused = "refused"
    /// Rows the trail could not store (a full disk, an I/O error), counted by event once it
    /// can write again.
    case auditLost = "audit-lost"
}

/// The policy outcome recorded with every audit event.
public enum AuditDecision: String, Sendable, CaseIterable {
    case allow
    case deny
}

/// One row of the audit trail before the writer assigns its `seq` and hash chain links.
///
/// Field order follows the canonical order (`AuditCanonical`): a new field goes at the end,
/// and must leave the encoding of every row that lacks it unchanged, or stored trails stop
/// verifying.
public struct AuditRecord: Sendable, Equatable {
    public var event: AuditEvent
    /// UTC microseconds since the Unix epoch; written as `ts` by `AuditTimestamp.format`.
    public var timestampMicros: Int64
    public var session: String
    public var client: String
    public var listener: String
    public var principal: String?
    public var scheme: String?
    /// The destination as the client asked for it (`host:port`).
    public var target: String?
    /// The address actually connected to (`ip:port`).
    public var resolved: String?
    /// The registry rule that matched, as written in the config.
    public var rule: String?
    public var decision: AuditDecision
    /// A `ReasonCode` raw value, or another stable machine-readable code.
    public var reason: String
    /// HTTP status sent to the client, when there was one.
    public var status: Int?
    /// Payload bytes client -> upstream; nil when nobody knows (the close row of a stream
    /// whose relay stopped without recording its end).
    public var bytesUp: Int64?
    /// Payload bytes upstream -> client; nil when nobody knows, as for `bytesUp`.
    public var bytesDown: Int64?
    public var durationMs: Int64?
    /// The payload's TLS version (`TLSv1.3`): a tunnel's end-to-end TLS as its ServerHello
    /// negotiated it, or the relay's own TLS to the upstream.
    public var tlsVersion: String?
    /// The payload's TLS cipher suite (IANA name), from the same handshake as `tlsVersion`.
    public var tlsCipher: String?
    /// True when the session ran in Enterprise Simulation Mode.
    public var simulated: Bool
    /// The server name of the payload's TLS: the SNI a tunnel's ClientHello carried
    /// (normalised), or the name the relay sent upstream in its own TLS.
    public var tlsSNI: String?
    /// Whether the tunnel's ClientHello carried Encrypted Client Hello, in which case
    /// `tlsSNI` is the outer (public) name; nil when the payload is not TLS.
    public var tlsECH: Bool?
    /// The TLS version between the client and an HTTPS listener; nil on a plain listener.
    public var clientTLSVersion: String?
    /// The TLS cipher suite between the client and an HTTPS listener; nil on a plain listener.
    public var clientTLSCipher: String?

    /// True when any field of the TLS extension group is set: only then does the canonical
    /// form carry the group, so rows without it hash as the base form alone.
    public var hasTLSExtension: Bool {
        tlsSNI != nil || tlsECH != nil || clientTLSVersion != nil || clientTLSCipher != nil
    }

    /// Every optional field defaults to absent (nil, zero bytes, not simulated), so the
    /// shortest call is `AuditRecord(event:timestampMicros:session:client:listener:decision:reason:)`.
    public init(
        event: AuditEvent,
        timestampMicros: Int64,
        session: String,
        client: String,
        listener: String,
        principal: String? = nil,
        scheme: String? = nil,
        target: String? = nil,
        resolved: String? = nil,
        rule: String? = nil,
        decision: AuditDecision,
        reason: String,
        status: Int? = nil,
        bytesUp: Int64? = 0,
        bytesDown: Int64? = 0,
        durationMs: Int64? = nil,
        tlsVersion: String? = nil,
        tlsCipher: String? = nil,
        simulated: Bool = false,
        tlsSNI: String? = nil,
        tlsECH: Bool? = nil,
        clientTLSVersion: String? = nil,
        clientTLSCipher: String? = nil
    ) {
        self.event = event
        self.timestampMicros = timestampMicros
        self.session = session
        self.client = client
        self.listener = listener
        self.principal = principal
        self.scheme = scheme
        self.target = target
        self.resolved = resolved
        self.rule = rule
        self.decision = decision
        self.reason = reason
        self.status = status
        self.bytesUp = bytesUp
        self.bytesDown = bytesDown
        self.durationMs = durationMs
        self.tlsVersion = tlsVersion
        self.tlsCipher = tlsCipher
        self.simulated = simulated
        self.tlsSNI = tlsSNI
        self.tlsECH = tlsECH
        self.clientTLSVersion = clientTLSVersion
        self.clientTLSCipher = clientTLSCipher
    }
}

extension AuditEvent {
    /// The event that ends a stream this event opens (`tunnel-open` → `tunnel-close`); nil
    /// for every event that opens nothing.
    public var closingEvent: AuditEvent? {
        switch self {
        case .tunnelOpen: return .tunnelClose
        case .requestOpen: return .requestClose
        case .forwardOpen: return .forwardClose
        default: return nil
        }
    }

    /// The event whose stream this one ends; nil unless this is a close event.
    public var openingEvent: AuditEvent? {
        switch self {
        case .tunnelClose: return .tunnelOpen
        case .requestClose: return .requestOpen
        case .forwardClose: return .forwardOpen
        default: return nil
        }
    }
}
