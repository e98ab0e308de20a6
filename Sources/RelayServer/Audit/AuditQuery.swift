import CSQLite
import RelayCore

/// One stored audit row as `dynrelay audit query` prints it: every column, in table order.
public struct AuditRow: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case null
        case integer(Int64)
        case text(String)
    }

    /// `(column name, value)` in the order of `audit_events`.
    public let columns: [(name: String, value: Value)]

    public static func == (lhs: AuditRow, rhs: AuditRow) -> Bool {
        lhs.columns.elementsEqual(rhs.columns) { $0.name == $1.name && $0.value == $1.value }
    }

    public subscript(_ name: String) -> Value? {
        columns.first { $0.name == name }?.value
    }

    /// One JSON object on one line (RFC 8259), keys in column order.
    public var jsonLine: String {
        var line = "{"
        for (index, column) in columns.enumerated() {
            if index > 0 { line += "," }
            line += JSONText.quoted(column.name) + ":"
            switch column.value {
            case .null: line += "null"
            case .integer(let value): line += String(value)
            case .text(let text): line += JSONText.quoted(text)
            }
        }
        return line + "}"
    }
}

/// Why a query could not run.
public struct AuditQueryError: Error, Equatable, Sendable {
    public let message: String
}

extension AuditLog {
    /// A `--since`/`--until` bound as compared with `ts`, or nil if `text` is not one: any
    /// prefix of the `ts` format that ends after a whole field (`2026-12-01`,
    /// `2026-12-01T04:30`, `2026-12-01T04:30:00.5`), optionally with a `Z` after it.
    public static func timeBound(_ text: String) -> String? {
        var bytes = Array(text.utf8)
        if bytes.count < AuditTimestamp.shape.count, bytes.last == UInt8(ascii: "Z") { bytes.removeLast() }
        // Cut inside a two-digit field ("2026-1") would compare as a different instant.
        let fieldEnds: Set = [4, 7, 10, 13, 16, 19, 21, 22, 23, 24, 25, 26, 27]
        guard fieldEnds.contains(bytes.count), AuditTimestamp.hasShape(bytes) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Calls `each` with the rows whose `ts` is at or after `since` and before `until` (both
    /// optional, both `timeBound` prefixes compared as text, which for this fixed-width UTC
    /// format is time order), in seq order, from a read-only connection.
    ///
    /// `ts` never decreases as seq grows (the writer holds a row's time at its predecessor's
    /// when two loops queued events out of order), so the range's ends are found by bisecting
    /// seq with point lookups: no index on `ts`, and no scan outside the range.
    public static func query(path: String, since: String? = nil, until: String? = nil,
                             _ each: (AuditRow) -> Void) throws(AuditQueryError) {
        func checked(_ bound: String?) throws(AuditQueryError) -> String? {
            guard let bound else { return nil }
            guard let normalized = timeBound(bound) else {
                throw AuditQueryError(message: "`\(bound)` is not a UTC time like 2026-12-01T04:30:00Z or a prefix of one")
            }
            return normalized
        }
        let since = try checked(since)
        let until = try checked(until)
        var db: OpaquePointer?
        SQLite.configureProcess()
        let rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        defer { sqlite3_close_v2(db) }
        guard rc == SQLITE_OK, let db else {
            throw AuditQueryError(message: "cannot open \(path): \(SQLite.message(db))")
        }
        sqlite3_busy_timeout(db, AuditLog.defaultBusyTimeoutMillis)
        // One read transaction: the bisection and the rows see the same snapshot.
        guard sqlite3_exec(db, "BEGIN", nil, nil, nil) == SQLITE_OK else {
            throw AuditQueryError(message: "cannot read \(path): \(SQLite.message(db))")
        }
        defer { sqlite3_exec(db, "COMMIT", nil, nil, nil) }
        let reader = try RowReader(db: db)
        let last = try reader.lastSeq()
        let first = try since.map { bound throws(AuditQueryError) in try reader.firstSeq(atOrAfter: bound, last: last) } ?? 1
        let end = try until.map { bound throws(AuditQueryError) in try reader.firstSeq(atOrAfter: bound, last: last) } ?? last + 1
        try reader.rows(from: first, before: end, each)
    }
}

/// The statements of one query, on one read-only connection.
private final class RowReader {
    private let db: OpaquePointer
    private let timestamp: OpaquePointer
    private let range: OpaquePointer
    private let maxSeq: OpaquePointer

    init(db: OpaquePointer) throws(AuditQueryError) {
        self.db = db
        var statements: [OpaquePointer] = []
        guard let present = AuditSchema.presentColumns(in: db) else {
            throw AuditQueryError(message: "cannot read audit_events: \(SQLite.message(db))")
        }
        for sql in [AuditSchema.selectTimestamp, AuditSchema.selectRange(present: present), AuditSchema.selectLastSeq] {
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK, let stmt else {
                statements.forEach { sqlite3_finalize($0) }
                throw AuditQueryError(message: "cannot read audit_events: \(SQLite.message(db))")
            }
            statements.append(stmt)
        }
        (timestamp, range, maxSeq) = (statements[0], statements[1], statements[2])
    }

    deinit {
        [timestamp, range, maxSeq].forEach { sqlite3_finalize($0) }
    }

    /// The highest seq, 0 for an empty table.
    func lastSeq() throws(AuditQueryError) -> Int64 {
        defer { sqlite3_reset(maxSeq) }
        guard sqlite3_step(maxSeq) == SQLITE_ROW else { throw failure("read the last seq") }
        return sqlite3_column_int64(maxSeq, 0)
    }

    /// The lowest seq in 1...last whose ts is >= `bound`, or last + 1 if none.
    /// Seq is gapless from 1 (`audit verify` checks that), so every probe finds its row.
    func firstSeq(atOrAfter bound: String, last: Int64) throws(AuditQueryError) -> Int64 {
        var low: Int64 = 1
        var high = last + 1
        while low < high {
            let middle = low + (high - low) / 2
            if try ts(of: middle) < bound {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }

    private func ts(of seq: Int64) throws(AuditQueryError) -> String {
        defer { sqlite3_reset(timestamp) }
        sqlite3_bind_int64(timestamp, 1, seq)
        guard sqlite3_step(timestamp) == SQLITE_ROW, case .text(let bytes) = SQLite.text(timestamp, 0) else {
            throw AuditQueryError(message: "seq \(seq) is missing or has no ts; run `dynrelay audit verify`")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func rows(from first: Int64, before end: Int64, _ each: (AuditRow) -> Void) throws(AuditQueryError) {
        guard first < end else { return }
        defer { sqlite3_reset(range) }
        sqlite3_bind_int64(range, 1, first)
        sqlite3_bind_int64(range, 2, end)
        while true {
            switch sqlite3_step(range) {
            case SQLITE_DONE:
                return
            case SQLITE_ROW:
                var columns: [(name: String, value: AuditRow.Value)] = []
                for (index, name) in AuditSchema.columns.enumerated() {
                    columns.append((name, value(Int32(index))))
                }
                each(AuditRow(columns: columns))
            default:
                throw failure("read rows \(first)..<\(end)")
            }
        }
    }

    private func value(_ index: Int32) -> AuditRow.Value {
        switch sqlite3_column_type(range, index) {
        case SQLITE_NULL:
            return .null
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(range, index))
        default:
            // Text as stored (anything else as SQLite renders it as text); bytes that are not
            // UTF-8 show as U+FFFD, and `audit verify` reports such rows.
            guard let base = sqlite3_column_text(range, index) else { return .text("") }
            let count = Int(sqlite3_column_bytes(range, index))
            return .text(String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self))
        }
    }

    private func failure(_ step: String) -> AuditQueryError {
        AuditQueryError(message: "\(step): \(SQLite.message(db))")
    }
}
