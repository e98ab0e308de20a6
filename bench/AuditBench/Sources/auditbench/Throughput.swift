import Dispatch
import RelayCore
import RelayServer
import Synchronization

/// Rows per second through a burst of appends, from the first append until every row is
/// committed; the audit engine's trail is verified afterwards, outside the clock.
enum Throughput {
    static func run(_ setup: Setup, _ options: Options) throws {
        let rows = try options.count("rows", default: 100_000)
        let threads = try options.count("threads", default: 2)
        let waitEvery = try options.count("wait-every", default: 2)
        let seconds: Double
        var details = ""
        switch setup.engine {
        case .audit:
            seconds = try auditLog(setup, rows: rows, threads: threads, waitEvery: waitEvery)
            details = " threads=\(threads) wait_every=\(waitEvery)"
        case .sqlite:
            seconds = try baseline(setup, rows: rows)
            details = " rows_per_commit=\(AuditLog.maxBatchSize)"
        }
        let rate = Int((Double(rows) / seconds).rounded())
        print("\(setup.resultPrefix) metric=throughput rows=\(rows)\(details) seconds=\((seconds * 1e6).rounded() / 1e6) rows_per_s=\(rate)")
    }

    private static func auditLog(_ setup: Setup, rows: Int, threads: Int, waitEvery: Int) throws -> Double {
        let log = try AuditLog(path: setup.databasePath, synchronousFull: setup.synchronousFull)
        let failures = Atomic<Int>(0)
        let callback: @Sendable (Result<Int64, AuditError>) -> Void = { result in
            if case .failure = result { failures.add(1, ordering: .relaxed) }
        }
        let start = monotonicNanos()
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            // Thread t appends rows t, t + threads, t + 2 threads, ...: every row once.
            for n in stride(from: thread, to: rows, by: threads) {
                log.append(SampleRecords.record(n), committed: n % waitEvery == 0 ? callback : nil)
            }
        }
        log.flush()
        let seconds = Double(monotonicNanos() - start) / 1e9
        log.close()
        guard failures.load(ordering: .relaxed) == 0, log.droppedCount == 0 else {
            throw BenchFailure(description: "audit: \(failures.load(ordering: .relaxed)) commits failed, \(log.droppedCount) rows dropped")
        }
        let verified = AuditLog.verify(path: setup.databasePath)
        guard verified == .ok(records: rows) else {
            throw BenchFailure(description: "audit: the trail does not hold the \(rows) rows written: \(verified)")
        }
        return seconds
    }

    private static func baseline(_ setup: Setup, rows: Int) throws -> Double {
        let database = try Baseline(path: setup.databasePath, synchronousFull: setup.synchronousFull)
        let start = monotonicNanos()
        for first in stride(from: 0, to: rows, by: AuditLog.maxBatchSize) {
            try database.insert(first: first, count: min(AuditLog.maxBatchSize, rows - first))
        }
        return Double(monotonicNanos() - start) / 1e9
    }
}
