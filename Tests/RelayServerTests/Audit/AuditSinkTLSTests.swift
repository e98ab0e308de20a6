import RelayCore
@testable import RelayServer
import Testing

/// What a session or relay hands the trail (`AuditEntry`) reaches the row's TLS columns.
@Suite struct AuditSinkTLSTests {
    @Test func everyTLSFieldOfAnEntryIsStored() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path)
        let sink = AuditSink(log: log, logger: RelayLog(level: .error))
        let identity = SessionIdentity(session: "0123456789abcdef", client: "127.0.0.1:5000", listener: "127.0.0.1:3129")
        sink.record(AuditEntry(event: .tunnelClose, decision: .allow, reason: .completed, target: "app.corp.example:443",
                               tlsVersion: "TLSv1.3", tlsCipher: "TLS_AES_256_GCM_SHA384", tlsSNI: "app.corp.example",
                               tlsECH: false, clientTLSVersion: "TLSv1.2", clientTLSCipher: "ECDHE-ECDSA-AES128-GCM-SHA256"),
                    identity: identity)
        sink.record(AuditEntry(event: .refused, decision: .deny, reason: .notRegistered), identity: identity)
        log.close()
        let rows = try SQL.query(path, "SELECT tls_version, tls_cipher, tls_sni, tls_ech, client_tls_version, client_tls_cipher "
                                 + "FROM audit_events ORDER BY seq")
        try #require(rows.count == 2)
        #expect(rows[0] == [
            "tls_version": .text("TLSv1.3"), "tls_cipher": .text("TLS_AES_256_GCM_SHA384"), "tls_sni": .text("app.corp.example"),
            "tls_ech": .integer(0), "client_tls_version": .text("TLSv1.2"),
            "client_tls_cipher": .text("ECDHE-ECDSA-AES128-GCM-SHA256"),
        ])
        #expect(rows[1].values.allSatisfy { $0 == .null })
        #expect(AuditLog.verify(path: path) == .ok(records: 2))
    }
}
