#if canImport(Glibc)
import Glibc
#endif
import CSQLite

/// One SQLite connection to the user store and the few statement shapes it needs.
/// Used by one thread at a time: the CLI's, or whichever thread runs a
/// `UserDirectory` refresh (refreshes never overlap).
final class UserDatabase {
    /// A value bound to a statement parameter.
    enum Value {
        case text(String?)
        case blob([UInt8]?)
    }

    /// One result row, valid only inside the `query` callback.
    struct Row {
        fileprivate let stmt: OpaquePointer

        func text(_ index: Int32) -> String? {
            guard sqlite3_column_type(stmt, index) == SQLITE_TEXT else { return nil }
            guard case .text(let bytes) = SQLite.text(stmt, index) else { return nil }
            return String(validating: bytes, as: UTF8.self)
        }

        func blob(_ index: Int32) -> [UInt8]? {
            guard sqlite3_column_type(stmt, index) == SQLITE_BLOB else { return nil }
            let base = sqlite3_column_blob(stmt, index)
            let count = Int(sqlite3_column_bytes(stmt, index))
            guard count > 0, let base else { return [] }
            return Array(UnsafeRawBufferPointer(start: base, count: count))
        }
    }

    let path: String
    private var db: OpaquePointer?

    /// Opens an existing database (`create` false) or creates it. `busyMillis` bounds the
    /// wait for another process's lock.
    init(path: String, create: Bool, busyMillis: Int32) throws(UserStoreError) {
        self.path = path
        let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX
        var handle: OpaquePointer?
        SQLite.configureProcess()
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        db = handle
        guard rc == SQLITE_OK else {
            let error = UserStoreError(code: UserStoreError.Code.open, sqliteCode: rc, message: "\(path): \(SQLite.message(handle))")
            close()
            throw error
        }
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyMillis)
    }

    deinit {
        close()
    }

    func close() {
        if let db {
            sqlite3_close_v2(db)
            self.db = nil
        }
    }

    /// Runs one or more statements without results.
    func exec(_ sql: String) throws(UserStoreError) {
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &errmsg)
        defer { sqlite3_free(errmsg) }
        guard rc == SQLITE_OK else {
            let text = errmsg.map { String(cString: $0) } ?? SQLite.message(db)
            throw failure("`\(sql.prefix(40))`: \(text)")
        }
    }

    /// Runs `sql` with `values` bound and calls `row` for each result row.
    func query(_ sql: String, _ values: [Value] = [], row: (Row) throws(UserStoreError) -> Void) throws(UserStoreError) {
        let stmt = try prepare(sql, values)
        defer { sqlite3_finalize(stmt) }
        while true {
            switch sqlite3_step(stmt) {
            case SQLITE_ROW: try row(Row(stmt: stmt))
            case SQLITE_DONE: return
            default: throw failure("`\(sql.prefix(40))`: \(SQLite.message(db))")
            }
        }
    }

    /// Runs a statement without results; returns the number of rows it changed.
    @discardableResult
    func run(_ sql: String, _ values: [Value] = []) throws(UserStoreError) -> Int {
        let stmt = try prepare(sql, values)
        defer { sqlite3_finalize(stmt) }
        guard sqlite3_step(stmt) == SQLITE_DONE else { throw failure("`\(sql.prefix(40))`: \(SQLite.message(db))") }
        return Int(sqlite3_changes(db))
    }

    /// The single text value `sql` returns, if any.
    func scalarText(_ sql: String) throws(UserStoreError) -> String? {
        var value: String?
        try query(sql) { row in value = row.text(0) }
        return value
    }

    /// Runs `body` in a transaction (`BEGIN IMMEDIATE` takes the write lock at once, so a
    /// read-check-write sequence cannot race another writer), rolling back on any error.
    func transaction<T>(immediate: Bool, _ body: () throws(UserStoreError) -> T) throws(UserStoreError) -> T {
        try exec(immediate ? "BEGIN IMMEDIATE" : "BEGIN")
        do throws(UserStoreError) {
            let result = try body()
            try exec("COMMIT")
            return result
        } catch {
            if let db, sqlite3_get_autocommit(db) == 0 { _ = sqlite3_exec(db, "ROLLBACK", nil, nil, nil) }
            throw error
        }
    }

    private func prepare(_ sql: String, _ values: [Value]) throws(UserStoreError) -> OpaquePointer {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK, let stmt else {
            throw failure("prepare `\(sql.prefix(40))`: \(SQLite.message(db))")
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .text(let text):
                rc = SQLite.bindText(stmt, index, text)
            case .blob(let bytes?):
                rc = bytes.withUnsafeBytes { sqlite3_bind_blob(stmt, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), SQLite.transient) }
            case .blob(nil):
                rc = sqlite3_bind_null(stmt, index)
            }
            guard rc == SQLITE_OK else {
                sqlite3_finalize(stmt)
                throw failure("bind `\(sql.prefix(40))`: \(SQLite.message(db))")
            }
        }
        return stmt
    }

    private func failure(_ message: String) -> UserStoreError {
        let code = SQLite.errorCode(db)
        let primary = code & 0xFF
        let kind = primary == SQLITE_BUSY || primary == SQLITE_LOCKED ? UserStoreError.Code.busy : UserStoreError.Code.io
        return UserStoreError(code: kind, sqliteCode: code, message: "\(path): \(message)")
    }
}
