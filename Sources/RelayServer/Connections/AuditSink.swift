import RelayCore

/// Turns a session's `AuditEntry` into a row of the trail and a log line.
///
/// Shared by every loop; `AuditLog` does the group commit on its own queue, so `record`
/// never waits on the disk.
final class AuditSink: Sendable {
    let log: AuditLog
    let logger: RelayLog

    init(log: AuditLog, logger: RelayLog) {
        self.log = log
        self.logger = logger
    }

    /// Appends the row; `committed` (if any) runs on the audit queue once it is durable.
    /// Given the loop `context` it is recorded on, a waited-for row starts its commit when
    /// that loop has handled the events at hand, together with the others they produced.
    func record(_ entry: AuditEntry, identity: SessionIdentity, batchingOn context: LoopContext? = nil,
                committed: (@Sendable (Bool) -> Void)? = nil) {
        let record = AuditRecord(
            event: entry.event, timestampMicros: AuditTimestamp.nowMicros(), session: identity.session,
            client: identity.client, listener: identity.listener, principal: entry.principal, scheme: entry.scheme,
            target: entry.target, resolved: entry.resolved, rule: entry.rule, decision: entry.decision,
            reason: entry.reasonText, status: entry.status, bytesUp: entry.bytesUp,
            bytesDown: entry.bytesDown, durationMs: entry.durationMs, tlsVersion: entry.tlsVersion,
            tlsCipher: entry.tlsCipher, simulated: false, tlsSNI: entry.tlsSNI, tlsECH: entry.tlsECH,
            clientTLSVersion: entry.clientTLSVersion ?? identity.clientTLSVersion,
            clientTLSCipher: entry.clientTLSCipher ?? identity.clientTLSCipher)
        let level: RelayLog.Level = entry.decision == .deny || entry.reason.isFailure ? .notice : .info
        logger.log(level, Self.line(entry, identity))
        // The row is handed over, not copied (a copy retains and releases each of its strings).
        if let committed {
            log.append(consume record, startNow: context == nil) { result in
                switch result {
                case .success: committed(true)
                case .failure: committed(false)
                }
            }
            context?.kickAuditBeforeWaiting()
        } else {
            log.append(consume record)
        }
    }

    private static func line(_ entry: AuditEntry, _ identity: SessionIdentity) -> String {
        var line = "\(entry.event.rawValue) session=\(identity.session) client=\(identity.client)"
        if let target = entry.target { line += " target=\(target)" }
        if let resolved = entry.resolved { line += " resolved=\(resolved)" }
        if let rule = entry.rule { line += " rule=\(rule)" }
        if let principal = entry.principal { line += " principal=\(RelayLog.quoted(principal))" }
        if let scheme = entry.scheme { line += " scheme=\(scheme)" }
        line += " decision=\(entry.decision.rawValue) reason=\(entry.reason.rawValue)"
        if let status = entry.status { line += " status=\(status)" }
        if entry.event == .tunnelClose || entry.event == .requestClose || entry.event == .forwardClose {
            line += " up=\(entry.bytesUp) down=\(entry.bytesDown) ms=\(entry.durationMs ?? 0)"
        }
        return line
    }
}

extension ReasonCode {
    /// Outcomes ops want to see at the default log level.
    var isFailure: Bool {
        switch self {
        case .allowed, .completed, .clientClosed, .upstreamClosed: return false
        default: return true
        }
    }
}
