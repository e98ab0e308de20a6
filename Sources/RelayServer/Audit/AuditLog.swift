import Dispatch
import RelayCore
import Synchronization

/// The append-only, hash-chained audit trail in SQLite (CONTRACT.md, "Audit table").
///
/// `append` only queues: the event loops never wait on the disk. A dedicated serial queue
/// takes everything pending and writes it in transactions of at most `maxBatchSize` rows
/// (group commit), one `BEGIN IMMEDIATE … COMMIT` each, then reports every record's seq
/// (or the batch's error) through its callback. A failed batch stores nothing, keeps seq
/// gapless and leaves the writer running for the next batch.
public final class AuditLog: Sendable {
    /// Upper bound of rows per transaction, so one commit (and its callbacks) stays short.
    public static let maxBatchSize = 4096

    /// The database file this log writes.
    public let path: String

    private typealias Callback = @Sendable (Result<Int64, AuditError>) -> Void

    private struct Entry: Sendable {
        var record: AuditRecord
        var committed: Callback?
    }

    private struct State: Sendable {
        var pending: [Entry] = []
        var draining = false
        var closed = false
        /// Records accepted by `append`; a flush waits until `processed` reaches its ticket.
        var appended: UInt64 = 0
        /// Records whose batch finished (committed or failed) and whose callbacks ran.
        var processed: UInt64 = 0
        var waiters: [(ticket: UInt64, semaphore: DispatchSemaphore)] = []
    }

    private enum AppendAction {
        case none
        case startDrain
        case rejectClosed
    }

    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "dynrelay.audit")
    private let writer: AuditWriter
    private let checkpointer: AuditCheckpointer

    /// Opens or creates the database at `path` (mode 0600, WAL, the `audit_events` table and
    /// its `ts` index) and continues the chain from its last row.
    ///
    /// - Parameters:
    ///   - synchronousFull: `PRAGMA synchronous=FULL` (each commit survives power loss) when
    ///     true, `NORMAL` (survives a process crash; the last commits may be lost on power
    ///     loss) when false.
    ///   - hashKey: nil chains with SHA-256; a non-empty key with HMAC-SHA-256.
    public init(path: String, synchronousFull: Bool = true, hashKey: [UInt8]? = nil) throws(AuditError) {
        self.path = path
        writer = try AuditWriter(path: path, synchronousFull: synchronousFull, hashKey: hashKey)
        do {
            checkpointer = try AuditCheckpointer(path: path)
        } catch {
            writer.close()
            throw error
        }
    }

    deinit {
        // Nothing can be pending: a scheduled drain holds `self` until the queue is empty.
        writer.close()
        checkpointer.close()
    }

    /// Queues `record`; returns at once. `committed`, if given, runs once on the audit queue
    /// with the record's seq after its transaction committed, or with the error that made
    /// the batch fail (or `AuditError.closed`). It must not call `flush` or `close`.
    public func append(_ record: AuditRecord, committed: (@Sendable (Result<Int64, AuditError>) -> Void)? = nil) {
        let action: AppendAction = state.withLock { s in
            if s.closed { return .rejectClosed }
            s.pending.append(Entry(record: record, committed: committed))
            s.appended += 1
            if s.draining { return .none }
            s.draining = true
            return .startDrain
        }
        switch action {
        case .none:
            break
        case .startDrain:
            queue.async { self.drain() }
        case .rejectClosed:
            if let committed {
                queue.async { committed(.failure(.closed)) }
            }
        }
    }

    /// Records appended but not yet through their batch (queued or being written). The queue
    /// has no bound of its own: metrics and overload decisions read this to keep it bounded.
    public var pendingCount: Int {
        state.withLock { Int(truncatingIfNeeded: $0.appended &- $0.processed) }
    }

    /// Blocks until every record appended before this call is committed (or failed) and its
    /// callback has run. For shutdown and tests; never call it on the audit queue.
    public func flush() {
        dispatchPrecondition(condition: .notOnQueue(queue))
        let semaphore: DispatchSemaphore? = state.withLock { s in
            guard s.processed < s.appended else { return nil }
            let semaphore = DispatchSemaphore(value: 0)
            s.waiters.append((s.appended, semaphore))
            return semaphore
        }
        semaphore?.wait()
    }

    /// Refuses further appends, writes what is pending and closes the database. Idempotent.
    public func close() {
        dispatchPrecondition(condition: .notOnQueue(queue))
        let first = state.withLock { s in
            defer { s.closed = true }
            return !s.closed
        }
        guard first else { return }
        flush()
        queue.sync { writer.close() }
        checkpointer.close()
    }

    /// Runs on `queue`: takes everything pending, writes it in capped transactions, reports.
    private func drain() {
        var taken: [Entry] = []
        while true {
            taken.removeAll(keepingCapacity: true)
            state.withLock { s in
                if s.pending.isEmpty {
                    s.draining = false
                } else {
                    swap(&s.pending, &taken)
                }
            }
            if taken.isEmpty { return }

            var start = taken.startIndex
            while start < taken.endIndex {
                let end = min(start + Self.maxBatchSize, taken.endIndex)
                let batch = taken[start..<end]
                let result = writer.write(batch.lazy.map(\.record))
                for (offset, entry) in batch.enumerated() {
                    entry.committed?(result.map { $0 + Int64(offset) })
                }
                let ready: [DispatchSemaphore] = state.withLock { s in
                    s.processed += UInt64(batch.count)
                    let processed = s.processed
                    let ready = s.waiters.filter { $0.ticket <= processed }.map(\.semaphore)
                    s.waiters.removeAll { $0.ticket <= processed }
                    return ready
                }
                for semaphore in ready { semaphore.signal() }
                start = end
            }
        }
    }
}
