#if canImport(Glibc)
import Glibc
#endif
import CSQLite
import RelayCore

/// The SQLite side of `AuditLog`: one connection, its prepared statements and the chain
/// arithmetic. Confined to the audit queue of the `AuditLog` that owns it (built on the
/// caller's thread before the queue ever sees it, closed there after the queue has drained).
final class AuditWriter: @unchecked Sendable {  // after init, only its AuditLog's queue touches it
    private var db: OpaquePointer?
    private var begin: OpaquePointer?
    private var commit: OpaquePointer?
    private var rollback: OpaquePointer?
    private var insert: OpaquePointer?
    private var tail: OpaquePointer?
    private var dataVersion: OpaquePointer?
    /// The seq of the chain's tail after this connection's last commit, and the
    /// `data_version` then: while no other connection has written since, the tail need not
    /// be read again (the cursor still holds its hash).
    private var knownTail: (seq: Int64, dataVersion: Int64)?
    /// The time of the chain's tail row: no row is stamped earlier, so `ts` never decreases
    /// in seq order and a time range is a seq range (`AuditLog.query`).
    private var tailMicros = Int64.min
    // Reused from row to row so the per-row path allocates nothing.
    private let cursor: AuditHashChain.Cursor
    private let timestamps = AuditTimestamp.Formatter()
    private let fields = AuditCanonical.FieldRanges()
    /// The canonical bytes of the row being written; grows when a row needs more.
    private var row = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8)

    /// `busyTimeoutMillis`: how long a commit waits for another process's write lock.
    init(path: String, synchronousFull: Bool, hashKey: [UInt8]?,
         busyTimeoutMillis: Int32) throws(AuditError) {
        // An empty key is a configuration mistake (an empty credential file), not a request
        // for an unkeyed chain: refuse it instead of silently weakening the trail.
        if hashKey?.isEmpty == true {
            throw AuditError(code: AuditError.Code.open, message: "the audit hash key is empty")
        }
        cursor = AuditHashChain.Cursor(chain: AuditHashChain(key: hashKey), after: AuditHashChain.genesis)
        // Create the file ourselves so it is 0600 from its first byte; SQLite gives the -wal
        // and -shm files the mode of the database file.
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let err = errno
            throw AuditError(code: AuditError.Code.open, message: "open \(path): \(String(cString: strerror(err)))")
        }
        Glibc.close(fd)

        SQLite.configureProcess()
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        db = handle
        guard rc == SQLITE_OK else {
            let error = AuditError(code: AuditError.Code.open, sqliteCode: rc, message: "\(path): \(SQLite.message(handle))")
            close()
            throw error
        }
        do throws(AuditError) {
            try configure(synchronousFull: synchronousFull, busyTimeoutMillis: busyTimeoutMillis)
            try prepareStatements()
            tailMicros = try readTail().2
        } catch {
            close()
            throw error
        }
    }

    deinit {
        close()
        row.deallocate()
    }

    private func configure(synchronousFull: Bool, busyTimeoutMillis: Int32) throws(AuditError) {
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMillis)
        let mode = try queryText("PRAGMA journal_mode=WAL")
        guard mode == "wal" else {
            throw AuditError(code: AuditError.Code.open, message: "journal_mode is \(mode ?? "unknown"), WAL refused")
        }
        try exec("PRAGMA synchronous=\(synchronousFull ? "FULL" : "NORMAL")", code: AuditError.Code.open)
        // AuditCheckpointer folds the WAL in from its own thread; this threshold (about 40 MiB
        // of WAL) only matters if it falls behind, and then bounds the WAL.
        try exec("PRAGMA wal_autocheckpoint=10000", code: AuditError.Code.open)
        try exec(AuditSchema.create, code: AuditError.Code.schema)
        try allowUnknownByteCounts()
        try addTLSColumns()
    }

    /// A table made before the TLS extension columns gains them, NULL in every stored row,
    /// which is what those rows hash as (`AuditCanonical`): their chain is untouched. Checked
    /// again under the write lock, so two processes opening one old trail add them once.
    private func addTLSColumns() throws(AuditError) {
        guard let db else { throw AuditError.closed }
        func missing() throws(AuditError) -> [(name: String, declaration: String)] {
            guard let present = AuditSchema.presentColumns(in: db) else {
                throw AuditError(code: AuditError.Code.schema, sqliteCode: SQLite.errorCode(db),
                                 message: "read the columns of audit_events: \(SQLite.message(db))")
            }
            return AuditSchema.addedColumns.filter { !present.contains($0.name) }
        }
        guard try !missing().isEmpty else { return }
        do throws(AuditError) {
            try exec("BEGIN IMMEDIATE", code: AuditError.Code.schema)
            for column in try missing() {
                try exec("ALTER TABLE audit_events ADD COLUMN \(column.name) \(column.declaration)",
                         code: AuditError.Code.schema)
            }
            try exec("COMMIT", code: AuditError.Code.schema)
        } catch {
            // The prepared ROLLBACK of `abandonTransaction` does not exist yet at open.
            if sqlite3_get_autocommit(db) == 0 { sqlite3_exec(db, "ROLLBACK", nil, nil, nil) }
            throw error
        }
    }

    /// A table made before byte counts could be unknown declares them NOT NULL: edit the
    /// declaration (no stored byte changes) as SQLite documents for dropping a constraint.
    private func allowUnknownByteCounts() throws(AuditError) {
        let table = "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'audit_events'"
        guard let sql = try queryText(table), AuditSchema.legacyByteColumns.contains(where: { sql.contains($0.0) }) else {
            return
        }
        guard let version = try queryText("PRAGMA schema_version").flatMap(Int64.init) else {
            throw AuditError(code: AuditError.Code.schema, message: "cannot read schema_version")
        }
        var edited = "sql"
        for (legacy, current) in AuditSchema.legacyByteColumns {
            edited = "replace(\(edited), '\(legacy)', '\(current)')"
        }
        do throws(AuditError) {
            try exec("""
            BEGIN IMMEDIATE;
            PRAGMA writable_schema = ON;
            UPDATE sqlite_schema SET sql = \(edited) WHERE type = 'table' AND name = 'audit_events';
            PRAGMA schema_version = \(version + 1);
            PRAGMA writable_schema = OFF;
            COMMIT;
            """, code: AuditError.Code.schema)
        } catch {
            abandonTransaction()
            throw error
        }
    }

    private func prepareStatements() throws(AuditError) {
        begin = try prepare("BEGIN IMMEDIATE")
        commit = try prepare("COMMIT")
        rollback = try prepare("ROLLBACK")
        insert = try prepare(AuditSchema.insert)
        tail = try prepare(AuditSchema.selectTail)
        dataVersion = try prepare("PRAGMA data_version")
    }

    /// Writes `records` as rows `tail+1 ...` in one transaction; returns the first seq.
    ///
    /// The tail is re-read inside `BEGIN IMMEDIATE` (holding the write lock), so the chain
    /// continues from what is on disk even after a failed batch or another writer.
    /// On any failure the transaction is rolled back and no record of the batch is stored.
    func write(_ records: UnsafeBufferPointer<AuditRecord>) -> Result<Int64, AuditError> {
        guard db != nil, let begin, let commit, let insert else { return .failure(.closed) }
        guard run(begin) == SQLITE_DONE else { return .failure(writeError("BEGIN IMMEDIATE")) }
        do throws(AuditError) {
            let version = try readDataVersion()
            var seq: Int64
            if let knownTail, knownTail.dataVersion == version {
                seq = knownTail.seq
            } else {
                let (tailSeq, tailHash, tailTime) = try readTail()
                seq = tailSeq
                cursor.reset(after: tailHash)
                tailMicros = tailTime
            }
            knownTail = nil
            let first = seq + 1
            for record in records {
                seq += 1
                // Two loops can stamp events microseconds apart in one order and queue them in
                // the other: the later row takes its predecessor's time.
                tailMicros = max(tailMicros, record.timestampMicros)
                let ts = timestamps.format(micros: tailMicros)
                let needed = AuditCanonical.maxEncodedCount(record, timestampCount: ts.count)
                if needed > row.count {
                    row.deallocate()
                    row = .allocate(byteCount: needed, alignment: 8)
                }
                let count = AuditCanonical.encode(seq: seq, ts: ts, record, into: row, fields: fields)
                let encoded = UnsafeRawBufferPointer(rebasing: row[..<count])
                cursor.advance(over: encoded)
                // The text columns are bound from the encoded row and the cursor's hex buffers
                // without a copy: both stay put until the step below is done.
                guard bind(insert, seq: seq, row: encoded, record) == SQLITE_OK else { throw writeError("bind seq \(seq)") }
                guard run(insert) == SQLITE_DONE else { throw writeError("INSERT seq \(seq)") }
            }
            guard run(commit) == SQLITE_DONE else { throw writeError("COMMIT") }
            // Our own commits leave data_version as it was.
            knownTail = (seq, version)
            return .success(first)
        } catch {
            abandonTransaction()
            return .failure(error)
        }
    }

    // MARK: - Streams left open

    /// The seq through which every open row has its close row (0 when never recorded).
    func closedThrough() throws(AuditError) -> Int64 {
        try queryText(AuditSchema.selectClosedThrough).flatMap(Int64.init) ?? 0
    }

    /// Records that every open row up to the chain's tail has its close row.
    func markClosedThroughTail() throws(AuditError) {
        let seq = try readTail().0
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, AuditSchema.upsertClosedThrough, -1, &stmt, nil) == SQLITE_OK, let stmt else {
            throw writeError("prepare closed_through")
        }
        defer { sqlite3_finalize(stmt) }
        guard SQLite.bindInteger(stmt, 1, seq) == SQLITE_OK, sqlite3_step(stmt) == SQLITE_DONE else {
            throw writeError("record closed_through")
        }
    }

    /// The open rows after `seq` that no close row ended, in seq order.
    func streamsLeftOpen(after seq: Int64) throws(AuditError) -> [(seq: Int64, record: AuditRecord)] {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, AuditSchema.selectStreamRows, -1, &stmt, nil) == SQLITE_OK, let stmt else {
            throw writeError("prepare the search for streams left open")
        }
        defer { sqlite3_finalize(stmt) }
        _ = SQLite.bindInteger(stmt, 1, seq)
        var streams = UnclosedStreams()
        while true {
            switch sqlite3_step(stmt) {
            case SQLITE_DONE:
                return streams.remaining
            case SQLITE_ROW:
                func text(_ column: Int32) -> String? {
                    guard case .text(let bytes) = SQLite.text(stmt, column) else { return nil }
                    return String(decoding: bytes, as: UTF8.self)
                }
                // Rows another writer shaped differently are skipped: `audit verify` is the
                // place that judges them.
                guard let event = text(1).flatMap(AuditEvent.init(rawValue:)),
                      let decision = text(10).flatMap(AuditDecision.init(rawValue:)) else { continue }
                let record = AuditRecord(
                    event: event, timestampMicros: 0, session: text(2) ?? "", client: text(3) ?? "",
                    listener: text(4) ?? "", principal: text(5), scheme: text(6), target: text(7),
                    resolved: text(8), rule: text(9), decision: decision, reason: "",
                    tlsVersion: text(11), tlsCipher: text(12), simulated: sqlite3_column_int64(stmt, 13) == 1,
                    tlsSNI: text(14),
                    tlsECH: sqlite3_column_type(stmt, 15) == SQLITE_INTEGER ? sqlite3_column_int64(stmt, 15) == 1 : nil,
                    clientTLSVersion: text(16), clientTLSCipher: text(17))
                streams.add(seq: sqlite3_column_int64(stmt, 0), record)
            default:
                throw writeError("search for streams left open")
            }
        }
    }

    /// Finalizes every statement and closes the connection; idempotent.
    func close() {
        for stmt in [begin, commit, rollback, insert, tail, dataVersion] where stmt != nil {
            sqlite3_finalize(stmt)
        }
        (begin, commit, rollback, insert, tail, dataVersion) = (nil, nil, nil, nil, nil, nil)
        if let db {
            sqlite3_close_v2(db)
            self.db = nil
        }
    }

    // MARK: - Steps

    /// Binds row `seq`: integers from `r`, text from the value ranges of its canonical
    /// encoding `row` (SQLITE_STATIC: `row` must outlive the step), hashes from `cursor`.
    /// Returns SQLITE_OK, or non-zero if some bind failed.
    private func bind(_ stmt: OpaquePointer, seq: Int64, row: UnsafeRawBufferPointer, _ r: AuditRecord) -> Int32 {
        func text(_ column: Int32) -> Int32 {
            // Columns 1...20 hold canonical fields 0...19; after prev_hash and hash (21, 22),
            // columns 23...26 hold the extension fields 20...23.
            SQLite.bindStaticText(stmt, column, row, fields[Int(column) - (column > 22 ? 3 : 1)])
        }
        // SQLITE_OK is 0: OR-ing the results is non-zero iff some bind failed.
        return SQLite.bindInteger(stmt, 1, seq)
            | text(2) | text(3) | text(4) | text(5) | text(6) | text(7) | text(8)
            | text(9) | text(10) | text(11) | text(12) | text(13)
            | SQLite.bindInteger(stmt, 14, r.status.map(Int64.init))
            | SQLite.bindInteger(stmt, 15, r.bytesUp)
            | SQLite.bindInteger(stmt, 16, r.bytesDown)
            | SQLite.bindInteger(stmt, 17, r.durationMs)
            | text(18) | text(19)
            | SQLite.bindInteger(stmt, 20, r.simulated ? 1 : 0)
            | SQLite.bindStaticText(stmt, 21, UnsafeRawBufferPointer(cursor.prevHashHex), 0..<64)
            | SQLite.bindStaticText(stmt, 22, UnsafeRawBufferPointer(cursor.hashHex), 0..<64)
            | text(23)
            | SQLite.bindInteger(stmt, 24, r.tlsECH.map { $0 ? 1 : 0 })
            | text(25) | text(26)
    }

    /// The last stored (seq, hash, time), or (0, genesis, .min) for an empty table. A time
    /// that does not parse (not written by this format) does not hold the next rows back.
    private func readTail() throws(AuditError) -> (Int64, String, Int64) {
        guard let tail else { throw AuditError.closed }
        defer { sqlite3_reset(tail) }
        switch sqlite3_step(tail) {
        case SQLITE_DONE:
            return (0, AuditHashChain.genesis, .min)
        case SQLITE_ROW:
            let seq = sqlite3_column_int64(tail, 0)
            guard case .text(let bytes) = SQLite.text(tail, 1),
                  let hash = String(validating: bytes, as: UTF8.self),
                  AuditHashChain.isWellFormed(hashHex: hash)
            else {
                throw AuditError(code: AuditError.Code.chain, message: "row \(seq) has a malformed hash; run `dynrelay audit verify`")
            }
            var time = Int64.min
            if case .text(let bytes) = SQLite.text(tail, 2), let ts = String(validating: bytes, as: UTF8.self) {
                time = AuditTimestamp.parse(ts) ?? .min
            }
            return (seq, hash.lowercased(), time)
        default:
            throw writeError("read chain tail")
        }
    }

    /// `PRAGMA data_version`: changes when another connection commits, not when this one does.
    private func readDataVersion() throws(AuditError) -> Int64 {
        guard let dataVersion else { throw AuditError.closed }
        defer { sqlite3_reset(dataVersion) }
        guard sqlite3_step(dataVersion) == SQLITE_ROW else { throw writeError("read data_version") }
        return sqlite3_column_int64(dataVersion, 0)
    }

    private func abandonTransaction() {
        guard let db, sqlite3_get_autocommit(db) == 0, let rollback else { return }
        // A ROLLBACK can itself be busy; the transaction must not outlive the batch.
        for _ in 0..<3 where sqlite3_get_autocommit(db) == 0 {
            _ = run(rollback)
        }
    }

    /// Steps a statement once and resets it, so a persistent statement never holds a read
    /// snapshot or a lock past its use.
    private func run(_ stmt: OpaquePointer) -> Int32 {
        let rc = sqlite3_step(stmt)
        sqlite3_reset(stmt)
        return rc
    }

    private func prepare(_ sql: String) throws(AuditError) -> OpaquePointer {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            throw AuditError(code: AuditError.Code.schema, sqliteCode: SQLite.errorCode(db), message: "prepare `\(sql)`: \(SQLite.message(db))")
        }
        return stmt
    }

    private func exec(_ sql: String, code: String) throws(AuditError) {
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &errmsg)
        defer { sqlite3_free(errmsg) }
        guard rc == SQLITE_OK else {
            let text = errmsg.map { String(cString: $0) } ?? SQLite.message(db)
            throw AuditError(code: code, sqliteCode: SQLite.errorCode(db), message: "`\(sql.prefix(40))`: \(text)")
        }
    }

    private func queryText(_ sql: String) throws(AuditError) -> String? {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK, let stmt else {
            throw AuditError(code: AuditError.Code.open, sqliteCode: SQLite.errorCode(db), message: "`\(sql)`: \(SQLite.message(db))")
        }
        defer { sqlite3_finalize(stmt) }
        let rc = sqlite3_step(stmt)
        guard rc == SQLITE_ROW else {
            throw AuditError(code: AuditError.Code.open, sqliteCode: SQLite.errorCode(db), message: "`\(sql)`: \(SQLite.message(db))")
        }
        guard let text = sqlite3_column_text(stmt, 0) else { return nil }
        return String(cString: text)
    }

    private func writeError(_ step: String) -> AuditError {
        AuditError(code: AuditError.Code.write, sqliteCode: SQLite.errorCode(db), message: "\(step): \(SQLite.message(db))")
    }
}
