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
