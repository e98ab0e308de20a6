import Foundation
import RelayCore
import RelayServer
import Testing

/// The TLS extension columns (`tls_sni`, `tls_ech`, `client_tls_version`,
/// `client_tls_cipher`): stored, chained, read back, added to trails made without them, and
/// never breaking the rows those trails already hold.
@Suite struct AuditTLSColumnsTests {
    private let dir: TempDir

    init() throws {
        dir = try TempDir()
    }

    static let extensionColumns = ["tls_sni", "tls_ech", "client_tls_version", "client_tls_cipher"]

    static func tlsRecord(_ n: Int, ech: Bool? = true) -> AuditRecord {
        var r = Records.sample(n)
        r.tlsVersion = "TLSv1.3"
        r.tlsCipher = "TLS_AES_128_GCM_SHA256"
        r.tlsSNI = "app\(n).corp.example"
        r.tlsECH = ech
        r.clientTLSVersion = "TLSv1.2"
        r.clientTLSCipher = "ECDHE-RSA-AES256-GCM-SHA384"
        return r
    }

    static func columnNames(_ path: String) throws -> [String] {
        try SQL.query(path, "SELECT name FROM pragma_table_info('audit_events') ORDER BY cid").compactMap { $0["name"]?.string }
    }

    static func extensionValues(_ path: String, seq: Int64) throws -> [SQLValue] {
        let row = try #require(try SQL.query(path, "SELECT * FROM audit_events WHERE seq = \(seq)").first)
        return extensionColumns.map { row[$0] ?? .text("missing") }
    }

    @Test func aFreshTrailHasTheColumnsAfterHash() throws {
        let path = dir.path("audit.db")
        try AuditLog(path: path).close()
        let names = try Self.columnNames(path)
        #expect(names.count == 26)
        #expect(Array(names.suffix(6)) == ["prev_hash", "hash"] + Self.extensionColumns)
    }

    @Test func theWriterStoresAndChainsEveryTLSField() throws {
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path)
        log.append(Self.tlsRecord(1))
        log.append(Self.tlsRecord(2, ech: false))
        var onlyClient = Records.sample(3)
        onlyClient.clientTLSVersion = "TLSv1.3"
        log.append(onlyClient)
        log.append(Records.sample(4))
        log.close()

        #expect(try Self.extensionValues(path, seq: 1)
            == [.text("app1.corp.example"), .integer(1), .text("TLSv1.2"), .text("ECDHE-RSA-AES256-GCM-SHA384")])
        #expect(try Self.extensionValues(path, seq: 2)
            == [.text("app2.corp.example"), .integer(0), .text("TLSv1.2"), .text("ECDHE-RSA-AES256-GCM-SHA384")])
        #expect(try Self.extensionValues(path, seq: 3) == [.null, .null, .text("TLSv1.3"), .null])
        #expect(try Self.extensionValues(path, seq: 4) == [.null, .null, .null, .null])

        // The stored hash is the chain over the canonical form with the group.
        let rows = try SQL.query(path, "SELECT ts, prev_hash, hash FROM audit_events WHERE seq = 1")
        let row = try #require(rows.first)
        let expected = AuditHashChain().next(
            prevHashHex: AuditHashChain.genesis,
            canonical: AuditCanonical.encode(seq: 1, ts: row["ts"]!.string!, Self.tlsRecord(1)))
        #expect(row["hash"] == .text(expected))
        #expect(AuditLog.verify(path: path) == .ok(records: 4))
    }

    @Test func editingATLSColumnBreaksTheChainAtThatRow() throws {
        let edits = [
            "tls_sni = 'evil.example'", "tls_sni = NULL", "tls_sni = ''", "tls_ech = 0", "tls_ech = NULL",
            "client_tls_version = 'TLSv1.0'", "client_tls_version = NULL", "client_tls_cipher = 'NULL-MD5'",
        ]
        for edit in edits {
            let path = dir.path("audit-\(UUID().uuidString).db")
            let log = try AuditLog(path: path)
            (1...4).forEach { log.append(Self.tlsRecord($0)) }
            log.close()
            try SQL.exec(path, "UPDATE audit_events SET \(edit) WHERE seq = 3")
            guard case .broken(3, let why) = AuditLog.verify(path: path) else {
                Issue.record("edit not detected at seq 3: \(edit): \(AuditLog.verify(path: path))")
                continue
            }
            #expect(why.contains("hash does not match"), "\(edit): \(why)")
        }
    }

    @Test func fillingATLSColumnOfARowWrittenWithoutThemIsDetected() throws {
        let path = dir.path("audit.db")
        try Records.writeLog(at: path, count: 3)
        for edit in ["tls_sni = 'app.corp.example'", "tls_ech = 0", "client_tls_version = 'TLSv1.3'", "client_tls_cipher = ''"] {
            try SQL.exec(path, "UPDATE audit_events SET \(edit) WHERE seq = 2")
            #expect(AuditLog.verify(path: path) == .broken(seq: 2, why: "hash does not match the row (altered, or written with a key)"),
                    "\(edit)")
            try SQL.exec(path, "UPDATE audit_events SET \(edit.prefix { $0 != " " }) = NULL WHERE seq = 2")
            #expect(AuditLog.verify(path: path) == .ok(records: 3), "undoing \(edit)")
        }
    }

    @Test func aTLSECHOtherThanZeroOrOneIsBrokenNotCoerced() throws {
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path)
        log.append(Self.tlsRecord(1))
        log.close()
        try SQL.exec(path, "UPDATE audit_events SET tls_ech = 2 WHERE seq = 1")
        #expect(AuditLog.verify(path: path) == .broken(seq: 1, why: "tls_ech is 2, not 0/1"))
        try SQL.exec(path, "UPDATE audit_events SET tls_ech = 'yes' WHERE seq = 1")
        guard case .broken(1, let why) = AuditLog.verify(path: path) else {
            Issue.record("text in tls_ech was accepted")
            return
        }
        #expect(why.contains("tls_ech"))
    }

    // MARK: - A trail written without the columns

    @Test func theOldTrailVerifiesReadOnlyWithoutBeingChanged() throws {
        let path = dir.path("old.db")
        try AuditBaseTrailFixture.write(to: path)
        #expect(try Self.columnNames(path).count == 22)
        #expect(AuditLog.verify(path: path) == .ok(records: AuditBaseTrailFixture.rowCount))
        var lines: [String] = []
        try AuditLog.query(path: path) { lines.append($0.jsonLine) }
        #expect(lines.count == AuditBaseTrailFixture.rowCount)
        #expect(lines.allSatisfy {
            $0.hasSuffix(#","tls_sni":null,"tls_ech":null,"client_tls_version":null,"client_tls_cipher":null}"#)
        })
        // Readers never alter the schema.
        #expect(try Self.columnNames(path).count == 22)
    }

    @Test func openingTheOldTrailAddsTheColumnsOnceAndKeepsItsChain() throws {
        let path = dir.path("old.db")
        try AuditBaseTrailFixture.write(to: path)
        let before = try SQL.query(path, "SELECT * FROM audit_events ORDER BY seq")

        let log = try AuditLog(path: path)
        log.append(Self.tlsRecord(7))
        log.append(Records.sample(8))
        log.close()

        let names = try Self.columnNames(path)
        #expect(Array(names.suffix(4)) == Self.extensionColumns)
        #expect(names.count == 26)
        let after = try SQL.query(path, "SELECT * FROM audit_events ORDER BY seq")
        try #require(after.count == AuditBaseTrailFixture.rowCount + 2)
        for (old, now) in zip(before, after) {
            // Every stored value is kept, the new columns are NULL.
            #expect(old.allSatisfy { now[$0.key] == $0.value })
            #expect(Self.extensionColumns.allSatisfy { now[$0] == .null })
        }
        #expect(after.prefix(AuditBaseTrailFixture.rowCount).map { $0["hash"]?.string } == AuditBaseTrailFixture.hashes)
        #expect(after[6]["prev_hash"]?.string == AuditBaseTrailFixture.hashes.last)
        #expect(try Self.extensionValues(path, seq: 7)
            == [.text("app7.corp.example"), .integer(1), .text("TLSv1.2"), .text("ECDHE-RSA-AES256-GCM-SHA384")])
        #expect(AuditLog.verify(path: path) == .ok(records: AuditBaseTrailFixture.rowCount + 2))

        // Opening again changes nothing more and continues the chain.
        let again = try AuditLog(path: path)
        again.append(Self.tlsRecord(9, ech: nil))
        again.close()
        #expect(try Self.columnNames(path) == names)
        #expect(AuditLog.verify(path: path) == .ok(records: AuditBaseTrailFixture.rowCount + 3))

        // A new row of the mixed trail is as protected as any.
        try SQL.exec(path, "UPDATE audit_events SET tls_sni = 'other.example' WHERE seq = 7")
        #expect(AuditLog.verify(path: path) == .broken(seq: 7, why: "hash does not match the row (altered, or written with a key)"))
    }

    @Test func aRestartClosesALeftOpenTLSTunnelWithItsTLSFacts() throws {
        let path = dir.path("audit.db")
        do {
            let log = try AuditLog(path: path, synchronousFull: false)
            var open = Self.tlsRecord(1)
            open.event = .tunnelOpen
            log.append(open)
            log.close()
        }
        let restarted = try AuditLog(path: path, synchronousFull: false)
        #expect(try restarted.closeStreamsLeftOpen() == 1)
        restarted.close()
        let close = try #require(try SQL.query(path, "SELECT event, reason FROM audit_events WHERE seq = 2").first)
        #expect(close["event"] == .text("tunnel-close") && close["reason"] == .text("relay-crashed"))
        #expect(try Self.extensionValues(path, seq: 2) == Self.extensionValues(path, seq: 1))
        #expect(AuditLog.verify(path: path) == .ok(records: 2))
    }

    // MARK: - What reviewers read

    @Test func jsonLinesCarryTheTLSColumns() throws {
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path)
        log.append(Self.tlsRecord(1))
        log.append(Records.sample(5))
        log.close()
        var rows: [AuditRow] = []
        try AuditLog.query(path: path) { rows.append($0) }
        try #require(rows.count == 2)
        #expect(Array(rows[0].columns.map(\.name).suffix(6)) == ["prev_hash", "hash"] + Self.extensionColumns)
        let hash = try #require(rows[0]["hash"])
        guard case .text(let hashText) = hash else { throw SQL.Failure(description: "hash is not text") }
        #expect(rows[0].jsonLine.hasSuffix(
            #","tls_version":"TLSv1.3","tls_cipher":"TLS_AES_128_GCM_SHA256","simulated":0,"#
                + #""prev_hash":"\#(AuditHashChain.genesis)","hash":"\#(hashText)","#
                + #""tls_sni":"app1.corp.example","tls_ech":1,"client_tls_version":"TLSv1.2","#
                + #""client_tls_cipher":"ECDHE-RSA-AES256-GCM-SHA384"}"#))
        #expect(rows[1].jsonLine.hasSuffix(#","tls_sni":null,"tls_ech":null,"client_tls_version":null,"client_tls_cipher":null}"#))
    }
}
