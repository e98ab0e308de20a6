import CSQLite

/// The `audit_events` table as CONTRACT.md fixes it, shared by the writer and the verifier
/// so both name the columns in the same order as `AuditCanonical`.
enum AuditSchema {
    static let columns = [
        "seq", "ts", "event", "session", "client", "listener", "principal", "scheme", "target",
        "resolved", "rule", "decision", "reason", "status", "bytes_up", "bytes_down",
        "duration_ms", "tls_version", "tls_cipher", "simulated", "prev_hash", "hash",
    ]

    static let create = """
        CREATE TABLE IF NOT EXISTS audit_events (
            seq INTEGER PRIMARY KEY,
            ts TEXT NOT NULL,
            event TEXT NOT NULL,
            session TEXT NOT NULL,
            client TEXT NOT NULL,
            listener TEXT NOT NULL,
            principal TEXT,
            scheme TEXT,
            target TEXT,
            resolved TEXT,
            rule TEXT,
            decision TEXT NOT NULL,
            reason TEXT NOT NULL,
            status INTEGER,
            bytes_up INTEGER NOT NULL,
            bytes_down INTEGER NOT NULL,
            duration_ms INTEGER,
            tls_version TEXT,
            tls_cipher TEXT,
            simulated INTEGER NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS audit_events_ts ON audit_events(ts);
        """

    static let insert = "INSERT INTO audit_events (\(columns.joined(separator: ", "))) VALUES ("
        + (1...columns.count).map { "?\($0)" }.joined(separator: ", ") + ")"

    static let selectAll = "SELECT \(columns.joined(separator: ", ")) FROM audit_events ORDER BY seq"

    static let selectTail = "SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1"
}

/// Small helpers over the SQLite C API that the importer leaves awkward.
enum SQLite {
    /// `SQLITE_TRANSIENT`: the importer drops the macro (it is a cast of -1 to a function
    /// pointer); SQLite copies the bytes before `sqlite3_bind_*` returns.
    static let transient = unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)

    static func message(_ db: OpaquePointer?) -> String {
        guard let db, let text = sqlite3_errmsg(db) else { return "out of memory" }
        return String(cString: text)
    }

    static func errorCode(_ db: OpaquePointer?) -> Int32 {
        guard let db else { return SQLITE_NOMEM }
        return sqlite3_extended_errcode(db)
    }

    /// Binds the exact UTF-8 bytes (embedded NULs included) rather than a C string.
    static func bindText(_ stmt: OpaquePointer, _ index: Int32, _ value: String?) -> Int32 {
        guard var value else { return sqlite3_bind_null(stmt, index) }
        return value.withUTF8 { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else {
                return sqlite3_bind_text(stmt, index, "", 0, transient)
            }
            return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(stmt, index, $0, Int32(bytes.count), transient)
            }
        }
    }

    static func bindInteger(_ stmt: OpaquePointer, _ index: Int32, _ value: Int64?) -> Int32 {
        guard let value else { return sqlite3_bind_null(stmt, index) }
        return sqlite3_bind_int64(stmt, index, value)
    }

    /// The column's bytes, or nil for NULL; other storage classes are reported as `.wrongType`.
    enum TextColumn {
        case null
        case text([UInt8])
        case wrongType(Int32)
    }

    static func text(_ stmt: OpaquePointer, _ index: Int32) -> TextColumn {
        switch sqlite3_column_type(stmt, index) {
        case SQLITE_NULL:
            return .null
        case SQLITE_TEXT:
            // Text first, then its length: the documented order that avoids a conversion.
            let base = sqlite3_column_text(stmt, index)
            let count = Int(sqlite3_column_bytes(stmt, index))
            guard count > 0, let base else { return .text([]) }
            return .text(Array(UnsafeBufferPointer(start: base, count: count)))
        case let other:
            return .wrongType(other)
        }
    }
}
