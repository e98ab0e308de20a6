import Dispatch
import RelayCore
import RelayServer

/// What a tunnel waits before its first relayed byte: one open row on an idle writer, from
/// append until its commit callback; the baseline is a one-row transaction.
enum CommitLatency {
    static func run(_ setup: Setup, _ options: Options) throws {
        let count = try options.count("count", default: 300)
        var micros: [Double]
        switch setup.engine {
        case .audit: micros = try auditLog(setup, count: count)
        case .sqlite: micros = try baseline(setup, count: count)
        }
        micros.sort()
        let p50 = micros[micros.count / 2]
        let p99 = micros[min(micros.count - 1, micros.count * 99 / 100)]
        print("\(setup.resultPrefix) metric=latency count=\(count) p50_us=\(Int(p50.rounded())) p99_us=\(Int(p99.rounded()))")
    }

    private static func auditLog(_ setup: Setup, count: Int) throws -> [Double] {
        let log = try AuditLog(path: setup.databasePath, synchronousFull: setup.synchronousFull)
        defer { log.close() }
        var micros: [Double] = []
        for n in 0..<count {
            let done = DispatchSemaphore(value: 0)
            let start = monotonicNanos()
            let outcome = Box()
            log.append(SampleRecords.record(n)) { result in
                outcome.result = result
                done.signal()
            }
            guard done.wait(timeout: .now() + 30) == .success else {
                throw BenchFailure(description: "audit: record \(n) waited 30 s for its commit")
            }
            micros.append(Double(monotonicNanos() - start) / 1e3)
            guard case .success(let seq)? = outcome.result, seq == Int64(n + 1) else {
                throw BenchFailure(description: "audit: record \(n) committed as \(String(describing: outcome.result))")
            }
        }
        return micros
    }

    private static func baseline(_ setup: Setup, count: Int) throws -> [Double] {
        let database = try Baseline(path: setup.databasePath, synchronousFull: setup.synchronousFull)
        var micros: [Double] = []
        for n in 0..<count {
            let start = monotonicNanos()
            try database.insert(first: n, count: 1)
            micros.append(Double(monotonicNanos() - start) / 1e3)
        }
        return micros
    }

    /// The callback's result, handed to the waiting thread; the semaphore orders the access.
    private final class Box: @unchecked Sendable {
        var result: Result<Int64, AuditError>?
    }
}
