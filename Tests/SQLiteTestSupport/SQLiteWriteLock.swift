import CSQLite

/// Another connection's write transaction on a database (`BEGIN IMMEDIATE`), held until
/// `release`: what a stalled disk or another writer looks like to the audit writer. Shared
/// by the server's unit tests and the integration tests. A test may release it from another
/// thread than the one that took it (SQLite's default threading mode is serialized); it must
/// not release it from two at once.
public final class SQLiteWriteLock: @unchecked Sendable {
    private var db: OpaquePointer?

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(path: String) throws {
        // Waits out a commit the writer may be making at this moment.
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK,
              sqlite3_busy_timeout(db, 5000) == SQLITE_OK,
              sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK
        else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw Failure(description: "lock \(path): \(message)")
        }
    }

    public func release() {
        guard let db else { return }
        sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
        sqlite3_close_v2(db)
        self.db = nil
    }

    deinit { release() }
}
