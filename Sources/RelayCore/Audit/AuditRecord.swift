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
/// Field order follows the table's column order; `AuditCanonical` relies on that order,
/// so a new field goes at the end (and changes the canonical form: add it deliberately).
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
    public var tlsVersion: String?
    public var tlsCipher: String?
    /// True when the session ran in Enterprise Simulation Mode.
    public var simulated: Bool

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
        simulated: Bool = false
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
