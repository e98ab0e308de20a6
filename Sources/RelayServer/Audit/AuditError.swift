/// Why the audit log could not open, write or close.
///
/// `code` is stable and machine-readable (log lines, metrics labels, the `internal-error`
/// refusal path); the SQLite result code and message say what the library reported.
public struct AuditError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The stable codes this type carries.
    public enum Code {
        /// The database file could not be created, opened or configured (WAL, pragmas).
        public static let open = "audit-open"
        /// The table, index or statements could not be created or prepared.
        public static let schema = "audit-schema"
        /// The stored chain cannot be continued (the last row's hash is malformed).
        public static let chain = "audit-chain"
        /// A batch could not be written or committed; none of its records are stored.
        public static let write = "audit-write"
        /// `append` after `close`.
        public static let closed = "audit-closed"
    }

    /// One of `AuditError.Code`.
    public let code: String
    /// The extended SQLite result code, or 0 (`SQLITE_OK`) when SQLite was not involved.
    public let sqliteCode: Int32
    /// SQLite's message (`sqlite3_errmsg`) or a description of the failed step.
    public let message: String

    public init(code: String, sqliteCode: Int32 = 0, message: String) {
        self.code = code
        self.sqliteCode = sqliteCode
        self.message = message
    }

    public var description: String {
        sqliteCode == 0 ? "\(code): \(message)" : "\(code): \(message) (sqlite \(sqliteCode))"
    }

    /// The error every `append` after `close` reports.
    public static let closed = AuditError(code: Code.closed, message: "the audit log is closed")
}
