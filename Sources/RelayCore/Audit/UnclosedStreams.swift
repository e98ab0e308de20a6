/// Pairs the open and close rows of a stretch of the trail and keeps the open rows that no
/// close row ended: the streams a relay left behind when it stopped without recording their
/// ends (a crash, SIGKILL, power loss).
///
/// A session's streams of one kind run one after another (a keep-alive connection's
/// requests, a tunnel after them), so within a session and kind the n-th close row ends
/// the n-th open row. Close rows whose open row lies before the stretch are ignored.
public struct UnclosedStreams {
    private struct Key: Hashable {
        var session: String
        var kind: AuditEvent
    }

    /// Open rows waiting for their close, by session and kind, oldest first.
    private var waiting: [Key: [(seq: Int64, record: AuditRecord)]] = [:]

    public init() {}

    /// Feeds the next row of the stretch, in seq order; rows of other events are ignored.
    public mutating func add(seq: Int64, _ record: AuditRecord) {
        if record.event.closingEvent != nil {
            waiting[Key(session: record.session, kind: record.event), default: []].append((seq, record))
        } else if let opening = record.event.openingEvent {
            let key = Key(session: record.session, kind: opening)
            guard var rows = waiting[key], !rows.isEmpty else { return }
            rows.removeFirst()
            waiting[key] = rows.isEmpty ? nil : rows
        }
    }

    /// The open rows no close row ended, in seq order.
    public var remaining: [(seq: Int64, record: AuditRecord)] {
        waiting.values.flatMap { $0 }.sorted { $0.seq < $1.seq }
    }

    /// The close row for `open`, written at `micros` for a stream whose end nobody
    /// recorded: the same stream, decision and TLS facts, `reason`, and no status, byte
    /// counts or duration, because nothing is known of them.
    public static func closeRow(for open: AuditRecord, reason: String, micros: Int64) -> AuditRecord? {
        guard let event = open.event.closingEvent else { return nil }
        return AuditRecord(event: event, timestampMicros: micros, session: open.session, client: open.client,
                           listener: open.listener, principal: open.principal, scheme: open.scheme,
                           target: open.target, resolved: open.resolved, rule: open.rule, decision: open.decision,
                           reason: reason, status: nil, bytesUp: nil, bytesDown: nil, durationMs: nil,
                           tlsVersion: open.tlsVersion, tlsCipher: open.tlsCipher, simulated: open.simulated,
                           tlsSNI: open.tlsSNI, tlsECH: open.tlsECH, clientTLSVersion: open.clientTLSVersion,
                           clientTLSCipher: open.clientTLSCipher)
    }
}
