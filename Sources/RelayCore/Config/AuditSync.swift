/// How hard the audit writer syncs: `full` survives power loss (SQLite synchronous=FULL),
/// `normal` only process crashes, for hosts that trade durability for throughput.
public enum AuditSync: String, Sendable {
    case full
    case normal
}
