import CSQLite
import Dispatch
import Foundation
import RelayCore
import RelayServer
import SQLiteTestSupport
import Synchronization
import Testing

@Suite struct AuditLogTests {
    @Test func appendFlushReadsBackEveryColumn() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path)
        let outcomes = Outcomes()
        var full = Records.sample(4)  // every optional present
        full.tlsCipher = "TLS_AES_128_GCM_SHA256"
        full.simulated = true
        full.status = 200
        let minimal = AuditRecord(
            event: .refused, timestampMicros: 1_796_062_904_123_456, session: "s-x", client: "[::1]:9",
            listener: "admin", decision: .deny, reason: ReasonCode.badRequestLine.rawValue)
        log.append(full, committed: outcomes.callback(0))
        log.append(minimal, committed: outcomes.callback(1))
        log.flush()

        #expect(outcomes.all.mapValues { $0.map { try? $0.get() } } == [0: [1], 1: [2]])
        let rows = try SQL.query(path, "SELECT * FROM audit_events ORDER BY seq")
        try #require(rows.count == 2)

        let chain = AuditHashChain()
        let hash1 = chain.next(prevHashHex: AuditHashChain.genesis,
                               canonical: AuditCanonical.encode(seq: 1, ts: "2026-11-30T18:21:44.000004Z", full))
        #expect(rows[0] == [
            "seq": .integer(1), "ts": .text("2026-11-30T18:21:44.000004Z"), "event": .text("tunnel-open"),
            "session": .text("s-4"), "client": .text("127.0.0.1:40004"), "listener": .text("main"),
            "principal": .text("user4@CORP"), "scheme": .text("basic"), "target": .text("app4.corp.example:443"),
            "resolved": .text("10.0.4.1:443"), "rule": .text("server .corp.example:443"), "decision": .text("allow"),
            "reason": .text("allowed"), "status": .integer(200), "bytes_up": .integer(40), "bytes_down": .integer(400),
            "duration_ms": .integer(4), "tls_version": .text("TLSv1.3"), "tls_cipher": .text("TLS_AES_128_GCM_SHA256"),
            "simulated": .integer(1), "prev_hash": .text(AuditHashChain.genesis), "hash": .text(hash1),
            "tls_sni": .null, "tls_ech": .null, "client_tls_version": .null, "client_tls_cipher": .null,
        ])
        let hash2 = chain.next(prevHashHex: hash1,
                               canonical: AuditCanonical.encode(seq: 2, ts: "2026-11-30T18:21:44.123456Z", minimal))
        #expect(rows[1] == [
            "seq": .integer(2), "ts": .text("2026-11-30T18:21:44.123456Z"), "event": .text("refused"),
            "session": .text("s-x"), "client": .text("[::1]:9"), "listener": .text("admin"),
            "principal": .null, "scheme": .null, "target": .null, "resolved": .null, "rule": .null,
            "decision": .text("deny"), "reason": .text("bad-request-line"), "status": .null,
            "bytes_up": .integer(0), "bytes_down": .integer(0), "duration_ms": .null,
            "tls_version": .null, "tls_cipher": .null, "simulated": .integer(0),
            "prev_hash": .text(hash1), "hash": .text(hash2),
            "tls_sni": .null, "tls_ech": .null, "client_tls_version": .null, "client_tls_cipher": .null,
        ])
        log.close()
        #expect(AuditLog.verify(path: path) == .ok(records: 2))
    }

    @Test func createsWALDatabaseInPrivateModeWithoutAPerRowTimeIndex() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path, synchronousFull: false)
        log.append(Records.sample(1))
        log.flush()
        for file in [path, path + "-wal", path + "-shm"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: file)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "\(file)")
        }
        #expect(try SQL.query(path, "PRAGMA journal_mode") == [["journal_mode": .text("wal")]])
        let indexes = try SQL.query(path, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit_events'")
        #expect(indexes.isEmpty)
        log.close()
    }

    @Test func aTimeIndexFromAnEarlierVersionIsDroppedOnOpen() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        try AuditLog(path: path).close()
        try SQL.exec(path, "CREATE INDEX audit_events_ts ON audit_events(ts)")
        try AuditLog(path: path).close()
        #expect(try SQL.query(path, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit_events'").isEmpty)
    }

    /// The writer never checkpoints inline at this size (its threshold is 10,000 pages), so
    /// rows in the database file itself (read ignoring the WAL) prove the background
    /// checkpointer ran; after close the WAL is folded in completely.
    @Test func backgroundCheckpointsMoveRowsIntoTheDatabaseFile() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path, synchronousFull: false)
        for n in 1...500 { log.append(Records.sample(n)) }
        log.flush()
        let deadline = Date().addingTimeInterval(5)
        var checkpointed = 0
        while checkpointed < 500 && Date() < deadline {
            usleep(100_000)
            // Before the first checkpoint even the table is only in the WAL.
            let rows = (try? SQL.query("file:\(path)?immutable=1", "SELECT count(*) AS n FROM audit_events")) ?? []
            if case .integer(let count)? = rows.first?["n"] { checkpointed = Int(count) }
        }
        #expect(checkpointed == 500, "rows in the database file without the WAL: \(checkpointed)")
        log.close()
        let wal = (try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? NSNumber
        #expect((wal?.intValue ?? 0) == 0, "after close the WAL is empty or gone")
        #expect(AuditLog.verify(path: path) == .ok(records: 500))
    }

    @Test func hostileTextRoundTripsByteForByte() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path)
        var r = Records.sample(1)
        r.target = "evil\u{0}host,1:x:443"
        r.principal = "jörg@CORP"
        r.session = ""
        r.rule = "-"
        log.append(r)
        log.close()
        let row = try #require(try SQL.query(path, "SELECT target, principal, session, rule FROM audit_events").first)
        #expect(row["target"] == .text("evil\u{0}host,1:x:443"))
        #expect(row["principal"] == .text("jörg@CORP"))
        #expect(row["session"] == .text(""))
        #expect(row["rule"] == .text("-"))
        #expect(AuditLog.verify(path: path) == .ok(records: 1))
    }

    @Test func reopenContinuesTheChain() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        try Records.writeLog(at: path, count: 10)
        let lastHash = try SQL.query(path, "SELECT hash FROM audit_events WHERE seq = 10").first?["hash"]

        let log = try AuditLog(path: path)
        let outcomes = Outcomes()
        for n in 11...20 { log.append(Records.sample(n), committed: outcomes.callback(n)) }
        log.close()

        #expect(outcomes.seqs().sorted() == Array(11...20))
        #expect(try SQL.query(path, "SELECT prev_hash FROM audit_events WHERE seq = 11").first?["prev_hash"] == lastHash)
        #expect(AuditLog.verify(path: path) == .ok(records: 20))
    }

    @Test func concurrentAppendsGetGaplessSeqsAndOneCallbackEach() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path, synchronousFull: false)
        let outcomes = Outcomes()
        let threads = 8
        let perThread = 500
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<perThread {
                let id = t * perThread + i
                log.append(Records.sample(id), committed: outcomes.callback(id))
            }
        }
        log.flush()
        #expect(log.pendingCount == 0)

        let all = outcomes.all
        #expect(all.count == threads * perThread)
        #expect(all.values.allSatisfy { $0.count == 1 })
        #expect(outcomes.seqs().sorted() == Array(1...Int64(threads * perThread)))
        // Each callback's seq names the row holding that record.
        let rows = try SQL.query(path, "SELECT seq, session FROM audit_events")
        let sessionBySeq = Dictionary(uniqueKeysWithValues: rows.map { ($0["seq"]!.int!, $0["session"]!.string!) })
        for (id, results) in all {
            let seq = try results[0].get()
            #expect(sessionBySeq[seq] == "s-\(id)")
        }
        log.close()
        #expect(AuditLog.verify(path: path) == .ok(records: threads * perThread))
    }

    @Test func failedBatchReportsErrorAndWriterKeepsGoing() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path)
        let outcomes = Outcomes()
        log.append(Records.sample(1), committed: outcomes.callback(1))
        log.flush()
        // Another connection makes the next insert of a poisoned row fail mid-transaction.
        try SQL.exec(path, """
            CREATE TRIGGER refuse_boom BEFORE INSERT ON audit_events WHEN NEW.target = 'boom'
            BEGIN SELECT RAISE(ABORT, 'boom refused'); END;
            """)
        var poisoned = Records.sample(2)
        poisoned.target = "boom"
        log.append(poisoned, committed: outcomes.callback(2))
        log.flush()
        for n in 3...5 { log.append(Records.sample(n), committed: outcomes.callback(n)) }
        log.flush()

        let all = outcomes.all
        #expect(all.values.allSatisfy { $0.count == 1 })
        guard case .failure(let error)? = all[2]?.first else {
            Issue.record("poisoned record did not fail: \(String(describing: all[2]))")
            return
        }
        #expect(error.code == AuditError.Code.write)
        #expect(error.sqliteCode & 0xff == SQLITE_CONSTRAINT)
        #expect(error.message.contains("boom refused"))
        #expect(try all[1]?.first?.get() == 1)
        #expect((3...5).compactMap { try? all[$0]?.first?.get() } == [2, 3, 4])
        log.close()
        #expect(AuditLog.verify(path: path) == .ok(records: 4))
    }

    @Test func callbacksMayAppendBecauseTheyRunOutsideTheLock() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path)
        let outcomes = Outcomes()
        log.append(Records.sample(1, event: .tunnelOpen)) { result in
            if case .success = result {
                log.append(Records.sample(1, event: .tunnelClose), committed: outcomes.callback(2))
            }
        }
        log.flush()  // the follow-up was appended before this flush's batch counted as done
        log.flush()
        #expect(outcomes.seqs() == [2])
        log.close()
    }

    /// Rows nobody waits for survive a batch that could not commit: here another process
    /// holds SQLite's write lock past the writer's busy timeout, then lets go.
    @Test func rowsOfABatchThatCouldNotCommitAreWrittenLater() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path, synchronousFull: false, busyTimeoutMillis: 30)
        log.append(Records.sample(1))
        log.flush()
        let lock = try SQLiteWriteLock(path: path)
        for n in 2...6 { log.append(Records.sample(n)) }
        usleep(60_000)  // the deferred commit of 2...6 has failed once by now
        lock.release()
        log.flush()
        #expect(log.droppedCount == 0)
        #expect(log.pendingCount == 0)
        let sessions = try SQL.query(path, "SELECT session FROM audit_events ORDER BY seq").map { $0["session"]!.string! }
        #expect(sessions == (1...6).map { "s-\($0)" }, "every row, in the order appended")
        log.close()
        #expect(AuditLog.verify(path: path) == .ok(records: 6))
    }

    /// A row that can never be stored is given up after its attempts, alone: the rows of
    /// its batch are retried one by one and stored.
    @Test func aRowThatCanNeverBeStoredIsDroppedAlone() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path, synchronousFull: false)
        log.append(Records.sample(1))
        log.flush()
        try SQL.exec(path, """
            CREATE TRIGGER refuse_boom BEFORE INSERT ON audit_events WHEN NEW.target = 'boom'
            BEGIN SELECT RAISE(ABORT, 'boom refused'); END;
            """)
        var poisoned = Records.sample(3)
        poisoned.target = "boom"
        log.append(Records.sample(2))
        log.append(poisoned)
        log.append(Records.sample(4))
        log.flush()
        #expect(log.droppedCount == 1)
        #expect(log.pendingCount == 0)
        let sessions = try SQL.query(path, "SELECT session FROM audit_events ORDER BY seq").map { $0["session"]!.string! }
        #expect(sessions == ["s-1", "s-2", "s-4"])
        log.close()
        #expect(AuditLog.verify(path: path) == .ok(records: 3))
    }

    /// A waited-for record appended with `startNow: false` waits for `kick()` (the event
    /// loop's end of pass), then commits with every other record appended before it.
    @Test func aDeferredStartCommitsOnKick() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path, synchronousFull: false)
        let outcomes = Outcomes()
        for n in 1...3 {
            log.append(Records.sample(n), startNow: false, committed: outcomes.callback(n))
        }
        // A row nobody waits for (a close row) rides along with the promised kick instead of
        // starting a commit mid-pass.
        log.append(Records.sample(99))
        usleep(100_000)
        #expect(outcomes.all.isEmpty, "a deferred start committed without a kick")
        #expect(try SQL.query(path, "SELECT count(*) AS n FROM audit_events").first?["n"] == .integer(0))
        log.kick()
        #expect(eventually { outcomes.all.count == 3 })
        #expect(outcomes.seqs().sorted() == [1, 2, 3])
        #expect(try SQL.query(path, "SELECT session FROM audit_events WHERE seq = 4").first?["session"]?.string == "s-99")
        // A kick with nothing waiting starts nothing; flush still commits a deferred record.
        log.kick()
        log.append(Records.sample(4), startNow: false) { _ in }
        log.flush()
        #expect(try SQL.query(path, "SELECT count(*) AS n FROM audit_events").first?["n"] == .integer(5))
        log.close()
    }

    @Test func appendAfterCloseFailsWithClosed() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path)
        log.append(Records.sample(1))
        log.close()
        log.close()  // idempotent
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Int64, AuditError>?>(nil)
        log.append(Records.sample(2)) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        #expect(outcome.withLock { $0 } == .failure(.closed))
        log.flush()  // returns at once: nothing is pending
        #expect(AuditLog.verify(path: path) == .ok(records: 1))
    }

    @Test func openFailuresAreTypedErrors() throws {
        let dir = try TempDir()
        #expect(throws: AuditError.self) { try AuditLog(path: dir.path("missing/dir/audit.db")) }
        do {
            _ = try AuditLog(path: dir.path("missing/dir/audit.db"))
        } catch {
            #expect(error.code == AuditError.Code.open)
        }

        do {
            _ = try AuditLog(path: dir.path("keyed.db"), hashKey: [])
            Issue.record("opened a log with an empty hash key")
        } catch {
            #expect(error.code == AuditError.Code.open)
        }
        #expect(AuditLog.verify(path: dir.path("keyed.db"), hashKey: []) == .broken(seq: 0, why: "the audit hash key is empty"))

        // A tail row whose hash is not a hash cannot be continued: refuse at startup.
        let path = dir.path("audit.db")
        try Records.writeLog(at: path, count: 3)
        try SQL.exec(path, "UPDATE audit_events SET hash = 'nope' WHERE seq = 3")
        do {
            _ = try AuditLog(path: path)
            Issue.record("opened a log whose tail hash is malformed")
        } catch {
            #expect(error.code == AuditError.Code.chain)
        }
    }

    @Test func existingFileModeIsKept() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        try Records.writeLog(at: path, count: 1)
        #expect(chmod(path, 0o640) == 0)  // an operator's choice, e.g. a reviewers' group
        try Records.writeLog(at: path, count: 1, first: 2)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o640)
    }
}
