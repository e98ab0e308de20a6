import CSQLite

/// The `audit_events` table, which reviewers' tools read directly: shared by the writer, the
/// verifier and the query so all name the columns in the same order.
///
/// The TLS extension columns come after `hash` because `ALTER TABLE … ADD COLUMN` can only
/// append: a fresh table is laid out like an upgraded one, so `SELECT *` reads alike on both.
///
/// No index on `ts`: the writer keeps `ts` non-decreasing in `seq` order, so a time range
/// is a seq range found by bisection (`AuditLog.query`). An index on `ts` cost every group
/// commit one more WAL page and every row a second b-tree insert, about 5% of the relay's
/// CPU per tunnel at full rate; databases made by earlier versions lose theirs on open.
enum AuditSchema {
    static let columns = [
        "seq", "ts", "event", "session", "client", "listener", "principal", "scheme", "target",
        "resolved", "rule", "decision", "reason", "status", "bytes_up", "bytes_down",
        "duration_ms", "tls_version", "tls_cipher", "simulated", "prev_hash", "hash",
    ] + addedColumns.map(\.name)

    /// The TLS extension columns (`AuditCanonical`'s extension group, in its order) with
    /// their declarations: a table made before them gains them at open (`AuditWriter`).
    static let addedColumns: [(name: String, declaration: String)] = [
        ("tls_sni", "TEXT"),
        ("tls_ech", "INTEGER"),
        ("client_tls_version", "TEXT"),
        ("client_tls_cipher", "TEXT"),
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
            bytes_up INTEGER,
            bytes_down INTEGER,
            duration_ms INTEGER,
            tls_version TEXT,
            tls_cipher TEXT,
            simulated INTEGER NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL,
            tls_sni TEXT,
            tls_ech INTEGER,
            client_tls_version TEXT,
            client_tls_cipher TEXT
        );
        DROP INDEX IF EXISTS audit_events_ts;
        CREATE TABLE IF NOT EXISTS audit_meta (
            name TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        );
        """

    /// The byte counts as a database made before they could be unknown declares them.
    /// Dropping a NOT NULL changes no stored byte, so `AuditWriter` edits the declaration in
    /// place (the procedure SQLite documents for such changes) instead of copying the table.
    static let legacyByteColumns = [
        ("bytes_up INTEGER NOT NULL", "bytes_up INTEGER"),
        ("bytes_down INTEGER NOT NULL", "bytes_down INTEGER"),
    ]

    /// `audit_meta` row: every open row with a seq up to this value has its close row, so
    /// the search for streams left open at start begins after it.
    static let closedThroughName = "closed_through"

    static let selectClosedThrough = "SELECT coalesce((SELECT value FROM audit_meta WHERE name = '\(closedThroughName)'), 0)"

    static let upsertClosedThrough = "INSERT INTO audit_meta (name, value) VALUES ('\(closedThroughName)', ?1) "
        + "ON CONFLICT(name) DO UPDATE SET value = excluded.value"

    /// The rows that open and close streams after a seq, with what a close row copies.
    static let selectStreamRows = """
        SELECT seq, event, session, client, listener, principal, scheme, target, resolved, rule, decision,
               tls_version, tls_cipher, simulated, tls_sni, tls_ech, client_tls_version, client_tls_cipher
        FROM audit_events
        WHERE seq > ?1 AND event IN ('tunnel-open', 'tunnel-close', 'request-open', 'request-close',
                                     'forward-open', 'forward-close')
        ORDER BY seq
        """

    static let insert = "INSERT INTO audit_events (\(columns.joined(separator: ", "))) VALUES ("
        + (1...columns.count).map { "?\($0)" }.joined(separator: ", ") + ")"

    static let selectTail = "SELECT seq, hash, ts FROM audit_events ORDER BY seq DESC LIMIT 1"

    static let selectTimestamp = "SELECT ts FROM audit_events WHERE seq = ?1"

    static let selectLastSeq = "SELECT max(seq) FROM audit_events"

    /// The column names `audit_events` has on `db`; empty when there is no such table, nil
    /// when they cannot be read.
    static func presentColumns(in db: OpaquePointer) -> Set<String>? {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info('audit_events')", -1, &stmt, nil) == SQLITE_OK,
              let stmt else { return nil }
        defer { sqlite3_finalize(stmt) }
        var names: Set<String> = []
        while true {
            switch sqlite3_step(stmt) {
            case SQLITE_DONE:
                return names
            case SQLITE_ROW:
                if case .text(let bytes) = SQLite.text(stmt, 0) { names.insert(String(decoding: bytes, as: UTF8.self)) }
            default:
                return nil
            }
        }
    }

    /// Every column of `columns`, in that order, with NULL standing in for the columns a table
    /// lacks: readers open a trail read-only, so one made before the TLS columns is read
    /// as it is, its rows holding NULL there, as the writer would have stored them.
    static func selectList(present: Set<String>) -> String {
        columns.map { present.contains($0) ? $0 : "NULL AS \($0)" }.joined(separator: ", ")
    }

    static func selectAll(present: Set<String>) -> String {
        "SELECT \(selectList(present: present)) FROM audit_events ORDER BY seq"
    }

    static func selectRange(present: Set<String>) -> String {
        "SELECT \(selectList(present: present)) FROM audit_events WHERE seq >= ?1 AND seq < ?2 ORDER BY seq"
    }
}
