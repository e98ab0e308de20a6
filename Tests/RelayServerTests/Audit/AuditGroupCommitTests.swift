import CSQLite
import Dispatch
import Foundation
import RelayCore
import RelayServer
import Testing

/// Group commit under the two shapes of load the relay produces: a burst far larger than
/// one transaction, and a lone record on an idle writer. How fast either goes is measured
/// by `bench/audit`; these check what must hold at any speed.
@Suite struct AuditGroupCommitTests {
    /// Two threads append more rows than several transactions hold, mostly rows nobody
    /// waits for (close rows) with a waited-for one (an open row) now and then, in both
    /// `audit-sync` modes: every row is stored once, each thread's rows in the order it
    /// appended them, every waited-for row's callback names its own row, and the chain verifies.
    @Test(arguments: [true, false])
    func aBurstLargerThanABatchKeepsEveryRowInOrder(synchronousFull: Bool) throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path, synchronousFull: synchronousFull)
        let threads = 2
        let perThread = 2 * AuditLog.maxBatchSize + 1
        let waitEvery = 1000
        let outcomes = Outcomes()
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<perThread {
                let id = t * perThread + i
                log.append(Records.sample(id), committed: id % waitEvery == 0 ? outcomes.callback(id) : nil)
            }
        }
        log.flush()
        #expect(log.pendingCount == 0)
        #expect(log.droppedCount == 0)

        let waitedFor = (0..<(threads * perThread)).filter { $0 % waitEvery == 0 }
        let all = outcomes.all
        #expect(all.keys.sorted() == waitedFor)
        #expect(all.values.allSatisfy { $0.count == 1 }, "one callback per waited-for row")
        let sessions = try SQL.query(path, "SELECT seq, session FROM audit_events ORDER BY seq")
            .map { ($0["seq"]!.int!, $0["session"]!.string!) }
        #expect(sessions.map(\.0) == Array(1...Int64(threads * perThread)), "gapless seqs")
        let sessionBySeq = Dictionary(uniqueKeysWithValues: sessions)
        for (id, results) in all {
            let seq = try results[0].get()
            #expect(sessionBySeq[seq] == "s-\(id)", "the callback of record \(id) names seq \(seq)")
        }
        for t in 0..<threads {
            let ids = (t * perThread)..<((t + 1) * perThread)
            let stored = sessions.map(\.1).filter { session in
                Int(session.dropFirst(2)).map(ids.contains) ?? false
            }
            #expect(stored == ids.map { "s-\($0)" }, "thread \(t)'s rows, once each, in the order appended")
        }
        log.close()
        #expect(AuditLog.verify(path: path) == .ok(records: threads * perThread))
    }

    /// A tunnel's open row on an idle writer: its commit starts by itself, with no flush,
    /// kick or later record to carry it, and its callback reports its seq.
    @Test(arguments: [true, false])
    func aLoneWaitedForRecordCommitsByItself(synchronousFull: Bool) throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path, synchronousFull: synchronousFull)
        for n in 1...20 {
            let outcomes = Outcomes()
            let done = DispatchSemaphore(value: 0)
            let callback = outcomes.callback(n)
            log.append(Records.sample(n)) { result in
                callback(result)
                done.signal()
            }
            try #require(done.wait(timeout: .now() + 10) == .success, "record \(n) waited 10 s for its commit")
            #expect(try outcomes.all[n]?.first?.get() == Int64(n))
        }
        #expect(try SQL.query(path, "SELECT count(*) AS n FROM audit_events").first?["n"] == .integer(20))
        log.close()
        #expect(AuditLog.verify(path: path) == .ok(records: 20))
    }
}
