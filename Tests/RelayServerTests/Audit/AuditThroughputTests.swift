import Dispatch
import RelayCore
import RelayServer
import Testing

/// Measures group-commit throughput; prints, never asserts on time (ENGINEERING.md).
@Suite(.serialized) struct AuditThroughputTests {
    @Test(arguments: [true, false])
    func hundredThousandRecordsFromTwoThreads(synchronousFull: Bool) throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path, synchronousFull: synchronousFull)
        let total = 100_000
        let outcomes = Outcomes()
        let start = DispatchTime.now()
        DispatchQueue.concurrentPerform(iterations: 2) { t in
            for i in 0..<(total / 2) {
                let id = t * (total / 2) + i
                log.append(Records.sample(id), committed: id % 1000 == 0 ? outcomes.callback(id) : nil)
            }
        }
        let appended = DispatchTime.now()
        log.flush()
        let committed = DispatchTime.now()
        log.close()

        let appendSeconds = Double(appended.uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        let seconds = Double(committed.uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        print("""
            audit throughput (synchronous=\(synchronousFull ? "FULL" : "NORMAL")): \(total) records in \
            \(String(format: "%.3f", seconds)) s = \(Int(Double(total) / seconds)) records/s committed; \
            append() alone \(Int(Double(total) / appendSeconds)) records/s
            """)
        #expect(outcomes.all.count == total / 1000)
        #expect(AuditLog.verify(path: path) == .ok(records: total))
    }

    /// What a tunnel waits before its first relayed byte: one append on an idle writer until
    /// its callback reports the commit.
    @Test(arguments: [true, false])
    func commitLatencyOfALoneRecord(synchronousFull: Bool) throws {
        let dir = try TempDir()
        let log = try AuditLog(path: dir.path("audit.db"), synchronousFull: synchronousFull)
        var micros: [Double] = []
        for n in 0..<300 {
            let done = DispatchSemaphore(value: 0)
            let start = DispatchTime.now()
            log.append(Records.sample(n)) { _ in done.signal() }
            done.wait()
            micros.append(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e3)
        }
        log.close()
        micros.sort()
        print("""
            audit commit latency (synchronous=\(synchronousFull ? "FULL" : "NORMAL")): \
            p50 \(Int(micros[micros.count / 2])) µs, p99 \(Int(micros[micros.count * 99 / 100])) µs
            """)
        #expect(micros.count == 300)
    }
}
