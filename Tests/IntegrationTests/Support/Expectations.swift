import Foundation
import Testing

/// Config text for one relay: an ephemeral proxy listener, the test's state dir, then `lines`.
enum RelayConfigText {
    static func proxy(_ lines: [String]) -> String {
        (["# integration test config", "listen 127.0.0.1:0", "state-dir {STATE}", "drain-timeout 2s"] + lines).joined(separator: "\n") + "\n"
    }
}

/// Shared assertions: a refusal is checked on the wire AND in the audit trail.
enum Expect {
    /// The contract's refusal shape: status, `Connection: close`, body = reason code + LF.
    static func refusal(_ response: RawResponse, status: Int, reason: String,
                        sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == status, "status line: \(response.statusLine), body: \(response.bodyText)", sourceLocation: sourceLocation)
        #expect(response.bodyText == reason + "\n", "body", sourceLocation: sourceLocation)
        #expect(response.header("connection")?.lowercased() == "close", "refusals close the connection", sourceLocation: sourceLocation)
    }

    /// A `refused` audit row with `reason` (and `status` when given) lands, bounded wait.
    @discardableResult
    static func refusedRow(_ relay: RelayProcess, reason: String, status: Int? = nil, target: String? = nil,
                           sourceLocation: SourceLocation = #_sourceLocation) -> AuditRow? {
        var condition = "event = 'refused' AND reason = ?"
        var parameters = [reason]
        if let target {
            condition += " AND target = ?"
            parameters.append(target)
        }
        let rows = relay.audit.waitForEvents(where: condition, parameters)
        #expect(rows.count >= 1, "no refused row with reason \(reason); audit:\n\(relay.audit.dump())", sourceLocation: sourceLocation)
        guard let row = rows.last else { return nil }
        #expect(row["decision"] == "deny", sourceLocation: sourceLocation)
        if let status {
            #expect(row["status"] == String(status), "audit status", sourceLocation: sourceLocation)
        }
        return row
    }

    /// An allowed stream whose upstream could not be reached: its open row and a close row
    /// with the failure's reason and status (every open row gets exactly one close row).
    static func failedOpenRows(_ relay: RelayProcess, kind: String, reason: String, status: Int, target: String,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        let closes = relay.audit.waitForEvents(where: "event = ? AND reason = ? AND target = ?",
                                               ["\(kind)-close", reason, target])
        #expect(closes.count >= 1, "no \(kind)-close row with reason \(reason); audit:\n\(relay.audit.dump())",
                sourceLocation: sourceLocation)
        #expect(closes.last?["status"] == String(status), "audit status", sourceLocation: sourceLocation)
        let opens = relay.audit.waitForEvents(where: "event = ? AND target = ?", ["\(kind)-open", target])
        #expect(opens.count == closes.count, "one open row per close row", sourceLocation: sourceLocation)
    }

    /// The relay survived and still serves an unrelated, already-open tunnel byte-exactly.
    static func unaffected(_ relay: RelayProcess, _ healthy: HealthyTunnel,
                           sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(relay.isAlive, "dynrelay died; stderr:\n\(relay.stderr)", sourceLocation: sourceLocation)
        #expect(throws: Never.self, "healthy tunnel after bad input", sourceLocation: sourceLocation) {
            try healthy.roundTrip()
        }
    }
}

/// Polls `condition` until it holds or `seconds` pass; whether it held.
func eventually(seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
