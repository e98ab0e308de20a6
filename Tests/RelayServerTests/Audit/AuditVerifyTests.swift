import Foundation
import RelayCore
import RelayServer
import Testing

@Suite struct AuditVerifyTests {
    /// One directory per test (Swift Testing builds a fresh suite value for each).
    private let dir: TempDir

    init() throws {
        dir = try TempDir()
    }

    /// The reason of a `.broken` verdict at `seq`; records an issue and returns nil for any
    /// other verdict.
    private func brokenReason(
        _ path: String, at seq: Int64, hashKey: [UInt8]? = nil, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) -> String? {
        let result = AuditLog.verify(path: path, hashKey: hashKey)
        guard case .broken(seq, let why) = result else {
            Issue.record("expected broken at seq \(seq), got \(result)", sourceLocation: sourceLocation)
            return nil
        }
        return why
    }

    /// A new database in this test's directory holding samples 1...count.
    private func log(count: Int, hashKey: [UInt8]? = nil) throws -> String {
        let path = dir.path("audit-\(UUID().uuidString).db")
        try Records.writeLog(at: path, count: count, hashKey: hashKey)
        return path
    }

    @Test func emptyAndIntactLogsVerify() throws {
        let empty = try log(count: 0)
        #expect(AuditLog.verify(path: empty) == .ok(records: 0))
        let path = try log(count: 100)
        #expect(AuditLog.verify(path: path) == .ok(records: 100))
    }

    @Test func missingDatabaseIsBrokenAndNotCreated() throws {
        let path = dir.path("nope.db")
        #expect(brokenReason(path, at: 0)?.contains("cannot open") == true)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func editedMiddleRowIsReportedAtItsSeq() throws {
        let path = try log(count: 100)
        try SQL.shell(path, "UPDATE audit_events SET bytes_down = bytes_down + 1 WHERE seq = 50")
        #expect(brokenReason(path, at: 50)?.contains("hash does not match") == true)
    }

    @Test func everyColumnIsProtected() throws {
        let edits = [
            "ts = '2026-01-01T00:00:00.000000Z'", "event = 'tunnel-close'", "session = 'forged'",
            "client = '10.9.9.9:1'", "listener = 'other'", "principal = 'mallory@CORP'", "scheme = NULL",
            "target = 'hr.corp.example:443'", "resolved = '10.6.6.6:443'", "rule = 'server *'",
            "decision = 'deny'", "reason = 'denied'", "status = 500", "bytes_up = 0", "bytes_down = 1",
            "duration_ms = NULL", "tls_version = 'TLSv1.0'", "tls_cipher = 'NULL-SHA'", "simulated = 1",
            "prev_hash = '\(String(repeating: "1", count: 64))'", "hash = '\(String(repeating: "2", count: 64))'",
        ]
        for edit in edits {
            let path = try log(count: 5)
            try SQL.exec(path, "UPDATE audit_events SET \(edit) WHERE seq = 2")
            #expect(brokenReason(path, at: 2) != nil, "edit not detected: \(edit)")
        }
    }

    @Test func wrongStorageClassIsBrokenNotCoerced() throws {
        let path = try log(count: 3)
        // TEXT that cannot become an integer stays TEXT in an INTEGER column.
        try SQL.exec(path, "UPDATE audit_events SET bytes_up = 'lots' WHERE seq = 2")
        #expect(brokenReason(path, at: 2)?.contains("bytes_up") == true)
    }

    @Test func rehashedEditBreaksTheNextLink() throws {
        let path = try log(count: 10)
        // An attacker without a key can recompute the edited row's own hash...
        let row = try #require(try SQL.query(path, "SELECT * FROM audit_events WHERE seq = 5").first)
        var record = Records.sample(5)
        record.bytesDown = 0
        let forged = AuditHashChain().next(
            prevHashHex: row["prev_hash"]!.string!,
            canonical: AuditCanonical.encode(seq: 5, ts: row["ts"]!.string!, record))
        try SQL.exec(path, "UPDATE audit_events SET bytes_down = 0, hash = '\(forged)' WHERE seq = 5")
        // ...but the next row still links to the original.
        #expect(brokenReason(path, at: 6)?.contains("prev_hash") == true)
    }

    @Test func deletedMiddleRowIsAGap() throws {
        let path = try log(count: 10)
        try SQL.shell(path, "DELETE FROM audit_events WHERE seq = 4")
        #expect(brokenReason(path, at: 5)?.contains("missing") == true)
    }

    @Test func deletedFirstRowIsDetected() throws {
        let path = try log(count: 3)
        try SQL.exec(path, "DELETE FROM audit_events WHERE seq = 1")
        #expect(AuditLog.verify(path: path) == .broken(seq: 2, why: "chain starts at seq 2, expected 1"))
    }

    @Test func reorderedRowsAreDetected() throws {
        let path = try log(count: 6)
        try SQL.exec(path, """
            UPDATE audit_events SET seq = -3 WHERE seq = 3;
            UPDATE audit_events SET seq = 3 WHERE seq = 4;
            UPDATE audit_events SET seq = 4 WHERE seq = -3;
            """)
        _ = brokenReason(path, at: 3)
    }

    /// Documents the limit of a self-contained chain: dropping the newest rows leaves a valid
    /// shorter chain. Detecting it needs the last hash anchored elsewhere (syslog/collector).
    @Test func truncatedTailStillVerifiesShorter() throws {
        let path = try log(count: 10)
        try SQL.exec(path, "DELETE FROM audit_events WHERE seq > 7")
        #expect(AuditLog.verify(path: path) == .ok(records: 7))
    }

    @Test func keyedChainVerifiesOnlyWithItsKey() throws {
        let key = Array("k3y-from-LoadCredential".utf8)
        let keyed = try log(count: 20, hashKey: key)
        let plain = try log(count: 20)
        #expect(AuditLog.verify(path: keyed, hashKey: key) == .ok(records: 20))
        #expect(AuditLog.verify(path: plain) == .ok(records: 20))

        let keyedHashes = try SQL.query(keyed, "SELECT hash FROM audit_events ORDER BY seq")
        let plainHashes = try SQL.query(plain, "SELECT hash FROM audit_events ORDER BY seq")
        #expect(zip(keyedHashes, plainHashes).allSatisfy { $0 != $1 })

        #expect(brokenReason(keyed, at: 1)?.contains("written with a key") == true)
        #expect(brokenReason(keyed, at: 1, hashKey: key + [1])?.contains("another key") == true)
        #expect(brokenReason(plain, at: 1, hashKey: key) != nil)
    }

    @Test func keyedChainContinuesAcrossReopen() throws {
        let key = Array("k3y".utf8)
        let path = try log(count: 5, hashKey: key)
        try Records.writeLog(at: path, count: 5, first: 6, hashKey: key)
        #expect(AuditLog.verify(path: path, hashKey: key) == .ok(records: 10))
    }

    @Test func verifyWhileWriting() throws {
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path, synchronousFull: false)
        for n in 1...2_000 {
            log.append(Records.sample(n))
            if n % 500 == 0 {
                guard case .ok = AuditLog.verify(path: path) else {
                    Issue.record("verify failed while appending: \(AuditLog.verify(path: path))")
                    break
                }
            }
        }
        log.close()
        #expect(AuditLog.verify(path: path) == .ok(records: 2_000))
    }
}
