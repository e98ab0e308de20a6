/// The `audit_events` table as CONTRACT.md fixes it, shared by the writer and the verifier
/// so both name the columns in the same order as `AuditCanonical`.
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
        DROP INDEX IF EXISTS audit_events_ts;
        """

    static let insert = "INSERT INTO audit_events (\(columns.joined(separator: ", "))) VALUES ("
        + (1...columns.count).map { "?\($0)" }.joined(separator: ", ") + ")"

    static let selectAll = "SELECT \(columns.joined(separator: ", ")) FROM audit_events ORDER BY seq"

    static let selectTail = "SELECT seq, hash, ts FROM audit_events ORDER BY seq DESC LIMIT 1"

    static let selectTimestamp = "SELECT ts FROM audit_events WHERE seq = ?1"

    static let selectLastSeq = "SELECT max(seq) FROM audit_events"

    static let selectRange = "SELECT \(columns.joined(separator: ", ")) FROM audit_events WHERE seq >= ?1 AND seq < ?2 ORDER BY seq"
}
