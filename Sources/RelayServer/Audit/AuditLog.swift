import Dispatch
import RelayCore
import Synchronization

/// The append-only, hash-chained audit trail in SQLite: the table is `AuditSchema`, a row
/// and its place in the chain are RelayCore's `AuditCanonical` and `AuditHashChain`.
///
/// `append` only queues: the event loops never wait on the disk. A dedicated serial queue
/// takes everything pending and writes it in transactions of at most `maxBatchSize` rows
/// (group commit), one `BEGIN IMMEDIATE … COMMIT` each, then reports every record's seq
/// (or the batch's error) through its callback. A failed batch stores nothing, keeps seq
/// gapless and leaves the writer running for the next batch. Its records that nobody waits
/// for (close and refusal rows) are tried again, each on its own, `retryDelay` later, up to
/// `maxAttempts` times: a stall of the disk or another process's lock loses none of them,
/// and a row that can never be stored cannot take the others with it.
///
/// A record someone waits for (one with a `committed` callback: an open row holds back its
/// tunnel's first byte) starts a commit at once, or at its loop's promised `kick()`. A record
/// nobody waits for (close and refusal rows) rides along with the next such commit, or is
/// committed `deferredCommitDelay` after it was queued at the latest when none is coming:
/// under load that saves about a third of the commits, each of which writes whole pages to
/// the WAL whether it carries one row or twenty. `flush` and `close` commit deferred records
/// at once.
public final class AuditLog: Sendable {
    /// Upper bound of rows per transaction, so one commit (and its callbacks) stays short.
    public static let maxBatchSize = 4096

    /// The longest a record without a callback waits for a commit to ride along with.
    static let deferredCommitDelay: DispatchTimeInterval = .milliseconds(5)

    /// This many records waiting without a callback start a commit of their own.
    static let deferredLimit = 256

    /// Writes of a record nobody waits for before it is given up (`droppedCount`).
    public static let maxAttempts: UInt8 = 3

    /// How long a commit (or a reviewer's read) waits for another process's lock by default.
    public static let defaultBusyTimeoutMillis: Int32 = 5_000

    /// The pause before records of a failed batch are tried again.
    static let retryDelay: DispatchTimeInterval = .milliseconds(100)

    /// The database file this log writes.
    public let path: String

    private typealias Callback = @Sendable (Result<Int64, AuditError>) -> Void

    /// Records and their callbacks, index for index, in append order (which is seq order).
    /// Two arrays rather than one of pairs, so the writer borrows the records in place.
    private struct Queued: Sendable {
        var records: [AuditRecord] = []
        var callbacks: [Callback?] = []
        /// Failed writes so far; records tried again sit at the front of `pending`.
        var attempts: [UInt8] = []

        var isEmpty: Bool { records.isEmpty }
        var count: Int { records.count }

        /// Keeps the arrays' room for the next batch, unless a backlog made them large.
        mutating func removeAll() {
            let keep = records.capacity <= AuditLog.maxBatchSize
            records.removeAll(keepingCapacity: keep)
            callbacks.removeAll(keepingCapacity: keep)
            attempts.removeAll(keepingCapacity: keep)
        }

        mutating func append(_ record: consuming AuditRecord, _ callback: Callback?, attempts attempt: UInt8) {
            // Consumed: a borrowed record was copied into the array, retaining every string.
            records.append(record)
            callbacks.append(callback)
            attempts.append(attempt)
        }

        /// Puts `front` before everything queued, keeping both orders.
        mutating func prepend(_ front: Queued) {
            records.insert(contentsOf: front.records, at: 0)
            callbacks.insert(contentsOf: front.callbacks, at: 0)
            attempts.insert(contentsOf: front.attempts, at: 0)
        }
    }

    private struct State: Sendable {
        var pending = Queued()
        /// The queue a finished drain emptied, kept with its capacity for the next swap: a
        /// fresh one per drain regrew its arrays append by append on the loops.
        var spare = Queued()
        /// Entries in `pending` with a callback: a drain runs while there are any.
        var waitedFor = 0
        /// A drain is scheduled or running; it takes `pending` while `waitedFor > 0`.
        var draining = false
        /// A deferred drain is scheduled (`deferredCommitDelay` after it was armed).
        var deferredArmed = false
        var closed = false
        /// Records accepted by `append`; a flush waits until `processed` reaches its ticket.
        var appended: UInt64 = 0
        /// Records committed, or failed with a callback (which ran), or given up.
        var processed: UInt64 = 0
        /// Records nobody waited for, given up after `maxAttempts` failed writes.
        var dropped: UInt64 = 0
        /// What those records were, until the trail can say so (`writeLostRows`).
        var lost = AuditLostRows()
        /// A write of `lost` is scheduled.
        var lostRetryArmed = false
        /// Close rows were given up beyond what `lost` keeps: their open rows stay open,
        /// so no point of this run may be marked as having every stream closed.
        var closeRowsNotKept = false
        var waiters: [(ticket: UInt64, semaphore: DispatchSemaphore)] = []
    }

    private enum AppendAction {
        case none
        case startDrain
        case armDeferredDrain
        case rejectClosed
    }

    private let state = Mutex(State())
    /// `appended - processed`, mirrored outside the lock: every accepted connection reads it.
    private let pending = Atomic<Int>(0)
    private let queue = DispatchQueue(label: "dynrelay.audit")
    private let writer: AuditWriter
    private let checkpointer: AuditCheckpointer
    /// Session ids for the rows the trail writes about itself.
    private let sessionIDs = SessionIDGenerator()

    /// How often the trail tries to record the rows it lost while nothing else is written.
    static let lostRowsRetryDelay: DispatchTimeInterval = .seconds(1)

    /// Opens or creates the database at `path` (mode 0600, WAL, the `audit_events` table) and
    /// continues the chain from its last row.
    ///
    /// - Parameters:
    ///   - synchronousFull: `PRAGMA synchronous=FULL` (each commit survives power loss) when
    ///     true, `NORMAL` (survives a process crash; the last commits may be lost on power
    ///     loss) when false.
    ///   - hashKey: nil chains with SHA-256; a non-empty key with HMAC-SHA-256.
    ///   - busyTimeoutMillis: how long a commit waits for another process's write lock
    ///     before its batch fails.
    public init(path: String, synchronousFull: Bool = true, hashKey: [UInt8]? = nil,
                busyTimeoutMillis: Int32 = AuditLog.defaultBusyTimeoutMillis) throws(AuditError) {
        self.path = path
        writer = try AuditWriter(path: path, synchronousFull: synchronousFull, hashKey: hashKey,
                                 busyTimeoutMillis: busyTimeoutMillis)
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
    ///
    /// With `startNow: false` a waited-for record does not start a commit by itself: the
    /// caller promises `kick()` soon (an event loop calls it once per pass over its events,
    /// so every open row that pass produced shares one commit), and a drain already running
    /// takes it along anyway.
    public func append(_ record: consuming AuditRecord, startNow: Bool = true,
                       committed: (@Sendable (Result<Int64, AuditError>) -> Void)? = nil) {
        // Moved, not copied, into the queue: a copy retained and released every string of
        // the row on the loop (about half a microsecond a row in a profile of the forward path).
        var moving: AuditRecord? = consume record
        let action: AppendAction = state.withLock { s in
            if s.closed {
                // Counted with the rows given up: a row nobody waits for would vanish silently.
                if committed == nil { s.dropped += 1 }
                return .rejectClosed
            }
            s.pending.append(moving.take()!, committed, attempts: 0)
            s.appended += 1
            pending.add(1, ordering: .relaxed)
            let forcing = committed != nil || s.pending.count >= Self.deferredLimit
            if forcing { s.waitedFor += 1 }
            if s.draining { return .none }
            // Waited-for records with no drain running were all appended with `startNow:
            // false`: a kick is promised, and this record rides along with it. (Starting the
            // drain here, mid-pass, split a loop's pass over two commits; close rows started
            // about half of all drains that way.)
            if s.waitedFor > 0 && !startNow && committed != nil { return .none }
            if s.waitedFor > 0 && !forcing { return .none }
            if s.waitedFor > 0 {
                s.draining = true
                return .startDrain
            }
            if s.deferredArmed { return .none }
            s.deferredArmed = true
            return .armDeferredDrain
        }
        switch action {
        case .none:
            break
        case .startDrain:
            queue.async { self.drain(everything: false) }
        case .armDeferredDrain:
            armDeferredDrain()
        case .rejectClosed:
            if let committed {
                queue.async { committed(.failure(.closed)) }
            }
        }
    }

    /// Starts a commit of the waited-for records appended with `startNow: false`, unless one
    /// is running (it takes them when it finishes its batch) or there are none.
    public func kick() {
        let start = state.withLock { s in
            guard !s.draining, s.waitedFor > 0 else { return false }
            s.draining = true
            return true
        }
        if start { queue.async { self.drain(everything: false) } }
    }

    private func armDeferredDrain(after delay: DispatchTimeInterval = AuditLog.deferredCommitDelay) {
        queue.asyncAfter(deadline: .now() + delay) {
            let start = self.state.withLock { s in
                s.deferredArmed = false
                guard !s.draining, !s.pending.isEmpty else { return false }
                s.draining = true
                return true
            }
            if start { self.drain(everything: true) }
        }
    }

    /// Records appended but not yet through their batch (queued or being written). The queue
    /// has no bound of its own: metrics and overload decisions read this to keep it bounded.
    public var pendingCount: Int {
        pending.load(ordering: .relaxed)
    }

    /// Records nobody waited for that were given up after `maxAttempts` failed writes, or
    /// appended after `close`.
    public var droppedCount: UInt64 {
        state.withLock { $0.dropped }
    }

    /// True while given-up rows wait to be recorded (`audit-lost`): until then their
    /// streams' open rows lack close rows. Read on the audit queue, so a write of those
    /// rows under way (they are out of the ledger while it runs) is waited for, not taken
    /// for done. Never call it on the audit queue.
    public var hasUnrecordedLosses: Bool {
        dispatchPrecondition(condition: .notOnQueue(queue))
        return queue.sync { state.withLock { !$0.lost.isEmpty } }
    }

    // MARK: Streams left open

    /// Writes a close row (reason `relay-crashed`, stamped now, no byte counts) for every
    /// open row an earlier run left without one: it was killed, crashed or lost power before
    /// recording the ends of the streams it relayed. Returns how many. Call once, before the
    /// first `append`; the search starts after the last point where every stream was known
    /// closed (`markAllStreamsClosedUnlessRowsAreOwed`), so a clean restart reads nothing.
    public func closeStreamsLeftOpen() throws(AuditError) -> Int {
        let search = queue.sync { () -> Result<[(seq: Int64, record: AuditRecord)], AuditError> in
            Result { () throws(AuditError) in try writer.streamsLeftOpen(after: writer.closedThrough()) }
        }
        let left = try search.get()
        let now = AuditTimestamp.nowMicros()
        for (_, open) in left {
            if let close = UnclosedStreams.closeRow(for: open, reason: ReasonCode.relayCrashed.rawValue, micros: now) {
                append(close)
            }
        }
        flush()
        // Rows that could not be written wait as lost rows; until they are, the next start
        // must search again.
        try markAllStreamsClosedUnlessRowsAreOwed()
        return left.count
    }

    /// Records that every open row stored so far has its close row, unless some close row
    /// is still owed (given up and not yet written again, or not kept at all) or still
    /// queued: then the next start searches this run's rows too. Call once no stream is
    /// left (a clean stop). Decided on the audit queue, where no write of the owed rows can
    /// be half done. True when it marked.
    @discardableResult
    public func markAllStreamsClosedUnlessRowsAreOwed() throws(AuditError) -> Bool {
        try queue.sync { () -> Result<Bool, AuditError> in
            let owed = state.withLock { s in !s.lost.isEmpty || s.closeRowsNotKept || s.processed < s.appended }
            guard !owed else { return .success(false) }
            return Result { () throws(AuditError) in
                try writer.markClosedThroughTail()
                return true
            }
        }.get()
    }

    // MARK: Rows the trail could not store

    /// Runs on `queue`: records what was given up, once the trail can write (see
    /// `AuditLostRows.rows`). A write that fails keeps it for the next try.
    private func writeLostRows() {
        var lost = AuditLostRows()
        state.withLock { s in swap(&lost, &s.lost) }
        guard !lost.isEmpty else { return }
        let rows = lost.rows(micros: AuditTimestamp.nowMicros(), session: sessionIDs.next(),
                             formatTime: AuditTimestamp.format(micros:))
        var written = 0
        while written < rows.count {
            let end = min(written + Self.maxBatchSize, rows.count)
            let result = rows.withUnsafeBufferPointer { writer.write(UnsafeBufferPointer(rebasing: $0[written..<end])) }
            guard case .success = result else { break }
            written = end
        }
        guard written < rows.count else { return }
        let owed = lost.owed(afterWriting: written)
        state.withLock { s in s.lost.merge(owed) }
    }

    /// Tries `writeLostRows` every `lostRowsRetryDelay` until nothing is left, so the trail
    /// says what it lost even when no other row comes to be written.
    private func scheduleLostRowsRetry() {
        queue.asyncAfter(deadline: .now() + Self.lostRowsRetryDelay) {
            self.writeLostRows()
            let again = self.state.withLock { s in
                s.lostRetryArmed = !s.lost.isEmpty && !s.closed
                return s.lostRetryArmed
            }
            if again { self.scheduleLostRowsRetry() }
        }
    }

    /// Blocks until every record appended before this call is committed (or failed) and its
    /// callback has run. For shutdown and tests; never call it on the audit queue.
    public func flush() {
        dispatchPrecondition(condition: .notOnQueue(queue))
        let (semaphore, start): (DispatchSemaphore?, Bool) = state.withLock { s in
            guard s.processed < s.appended else { return (nil, false) }
            let semaphore = DispatchSemaphore(value: 0)
            s.waiters.append((s.appended, semaphore))
            // Deferred records are waited for now.
            s.waitedFor = max(s.waitedFor, 1)
            guard !s.draining else { return (semaphore, false) }
            s.draining = true
            return (semaphore, true)
        }
        if start { queue.async { self.drain(everything: true) } }
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

    /// Runs on `queue`: takes everything pending, writes it in capped transactions, reports;
    /// again while a waited-for record is pending (or, the first time, when `everything`).
    /// Leaves records nobody waits for to the next commit or the deferred drain.
    private func drain(everything: Bool) {
        var taken = state.withLock { s in
            var spare = Queued()
            swap(&spare, &s.spare)
            return spare
        }
        var takeAny = everything
        while true {
            taken.removeAll()
            let arm: Bool = state.withLock { s in
                if s.pending.isEmpty || (s.waitedFor == 0 && !takeAny) {
                    s.draining = false
                    swap(&s.spare, &taken)
                    if s.pending.isEmpty { s.waitedFor = 0 }  // a flush's mark with nothing left
                    guard !s.pending.isEmpty, !s.deferredArmed else { return false }
                    s.deferredArmed = true
                    return true
                }
                swap(&s.pending, &taken)
                s.waitedFor = 0
                return false
            }
            takeAny = false
            if taken.isEmpty {
                if arm { armDeferredDrain() }
                return
            }

            var start = 0
            var retry = Queued()
            while start < taken.count {
                // A record that failed before is written on its own, so a row that can never be
                // stored (a constraint, a trigger) does not take the others with it. Retried
                // records sit at the front of the queue, before every fresh one.
                let end = taken.attempts[start] > 0 ? start + 1 : min(start + Self.maxBatchSize, taken.count)
                let result = taken.records.withUnsafeBufferPointer { writer.write(UnsafeBufferPointer(rebasing: $0[start..<end])) }
                for index in start..<end {
                    taken.callbacks[index]?(result.map { $0 + Int64(index - start) })
                }
                var requeued = 0
                var givenUp = AuditLostRows()
                if case .failure(let error) = result {
                    // A waited-for record's failure went to its stream; the others try again.
                    for index in start..<end where taken.callbacks[index] == nil {
                        if taken.attempts[index] + 1 < Self.maxAttempts {
                            retry.append(taken.records[index], nil, attempts: taken.attempts[index] + 1)
                            requeued += 1
                        } else {
                            givenUp.add(taken.records[index], error: error)
                        }
                    }
                } else {
                    writeLostRows()
                }
                let finished = end - start - requeued
                let armLostRetry = !givenUp.isEmpty && state.withLock { s in
                    s.lost.merge(givenUp)
                    if s.lost.unkeptCloseRows > 0 { s.closeRowsNotKept = true }
                    defer { s.lostRetryArmed = true }
                    return !s.lostRetryArmed
                }
                if armLostRetry { scheduleLostRowsRetry() }
                let ready: [DispatchSemaphore] = state.withLock { s in
                    s.processed += UInt64(finished)
                    s.dropped += UInt64(givenUp.counts.values.reduce(0, +))
                    pending.subtract(finished, ordering: .relaxed)
                    let processed = s.processed
                    let ready = s.waiters.filter { $0.ticket <= processed }.map(\.semaphore)
                    s.waiters.removeAll { $0.ticket <= processed }
                    return ready
                }
                for semaphore in ready { semaphore.signal() }
                start = end
            }
            guard !retry.isEmpty else { continue }
            // Back off before trying again, unless a stream waits for a commit now.
            let (backOff, armRetry): (Bool, Bool) = state.withLock { s in
                s.pending.prepend(retry)
                guard s.waitedFor == 0 else { return (false, false) }
                s.draining = false
                taken.removeAll()
                swap(&s.spare, &taken)
                guard !s.deferredArmed else { return (true, false) }
                s.deferredArmed = true
                return (true, true)
            }
            if backOff {
                if armRetry { armDeferredDrain(after: Self.retryDelay) }
                return
            }
        }
    }
}
