import CSQLite
import Foundation
import Glibc

/// One `audit_events` row, every column as text (NULL columns are absent).
typealias AuditRow = [String: String]

/// A separate, read-only SQLite reader of the relay's audit database: what a reviewer (or
/// a second process) sees, not what the writer has in memory.
struct AuditDB: Sendable {
    let path: String

    /// Makes the database refuse every new row of `event` (a trigger, as a hostile or broken
    /// admin change would): the writer's batch holding such a row fails at once.
    func refuseRows(ofEvent event: String) throws {
        let sql = """
            CREATE TRIGGER refuse_\(event.replacingOccurrences(of: "-", with: "_")) BEFORE INSERT ON audit_events
            WHEN NEW.event = '\(event)' BEGIN SELECT RAISE(ABORT, 'refused by test'); END
            """
        try withReadWriteConnection { db in
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
                throw HarnessError("create trigger: \(String(cString: sqlite3_errmsg(db)))")
            }
        }
    }

    /// Runs `sql` with `?` parameters bound as text; every column comes back as text.
    func query(_ sql: String, _ parameters: [String] = []) throws -> [AuditRow] {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw HarnessError("open \(path): \(message)")
        }
        defer { sqlite3_close_v2(db) }
        sqlite3_busy_timeout(db, 5000)
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw HarnessError("prepare '\(sql)': \(String(cString: sqlite3_errmsg(db)))")
        }
        defer { sqlite3_finalize(statement) }
        // SQLITE_TRANSIENT: SQLite copies the text before the Swift string goes away.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (index, value) in parameters.enumerated() {
            sqlite3_bind_text(statement, Int32(index + 1), value, -1, transient)
        }
        var rows: [AuditRow] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_DONE { return rows }
            guard step == SQLITE_ROW else {
                throw HarnessError("step '\(sql)': \(String(cString: sqlite3_errmsg(db)))")
            }
            var row: AuditRow = [:]
            for column in 0..<sqlite3_column_count(statement) {
                let name = String(cString: sqlite3_column_name(statement, column))
                if sqlite3_column_type(statement, column) != SQLITE_NULL, let text = sqlite3_column_text(statement, column) {
                    row[name] = String(cString: text)
                }
            }
            rows.append(row)
        }
    }

    /// Rows of `audit_events` matching `condition` (SQL after WHERE), in seq order.
    func events(where condition: String, _ parameters: [String] = []) throws -> [AuditRow] {
        try query("SELECT * FROM audit_events WHERE \(condition) ORDER BY seq", parameters)
    }

    /// Polls (bounded) until at least `count` rows match: writes are group-committed off
    /// the event loops, so a close row may land a moment after the client saw the close.
    /// Returns what matched at the deadline, possibly fewer rows, for the test to assert on.
    func waitForEvents(where condition: String, _ parameters: [String] = [], count: Int = 1,
                       timeout: Double = 10) -> [AuditRow] {
        let deadline = Date().addingTimeInterval(timeout)
        var rows: [AuditRow] = []
        repeat {
            rows = (try? events(where: condition, parameters)) ?? []
            if rows.count >= count { return rows }
            usleep(25_000)
        } while Date() < deadline
        return rows
    }

    /// Everything, for failure messages.
    func dump() -> String {
        guard let rows = try? query("SELECT seq, event, target, rule, decision, reason, status, bytes_up, bytes_down FROM audit_events ORDER BY seq") else {
            return "(no readable audit db at \(path))"
        }
        return rows.map { row in
            ["seq", "event", "target", "rule", "decision", "reason", "status", "bytes_up", "bytes_down"]
                .map { "\($0)=\(row[$0] ?? "NULL")" }.joined(separator: " ")
        }.joined(separator: "\n")
    }
}

extension AuditDB {
    /// Runs one statement read-write: the tampering a verifier must catch.
    func execute(_ sql: String) throws {
        try withReadWriteConnection { db in
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
                throw HarnessError("'\(sql)': \(String(cString: sqlite3_errmsg(db)))")
            }
            guard sqlite3_changes(db) > 0 else { throw HarnessError("'\(sql)' changed no row") }
        }
    }

    /// Runs schema statements read-write (triggers that make the trail fail, and back).
    func alterSchema(_ sql: String) throws {
        try withReadWriteConnection { db in
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
                throw HarnessError("'\(sql)': \(String(cString: sqlite3_errmsg(db)))")
            }
        }
    }

    /// A read-write connection of its own for `body`, waiting out the writer's commits.
    private func withReadWriteConnection(_ body: (OpaquePointer) throws -> Void) throws {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else {
            sqlite3_close_v2(db)
            throw HarnessError("open \(path) read-write failed")
        }
        defer { sqlite3_close_v2(db) }
        sqlite3_busy_timeout(db, 5000)
        try body(db)
    }
}
