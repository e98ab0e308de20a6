/// Why the user store refused an operation, could not open, or could not find its key.
///
/// `code` is stable and machine-readable (scripts around `dynrelay users`, daemon log
/// lines); `message` says which user, path or mode was at fault. Neither ever carries a
/// password, hash or key byte, so the error is always safe to print.
public struct UserStoreError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The stable codes this type carries.
    public enum Code {
        /// A user name that is empty, too long, or has control characters or `:`.
        public static let invalidName = "invalid-user-name"
        /// A password that is empty, too long, not UTF-8 or has a NUL.
        public static let invalidPassword = "invalid-password"
        /// `add` of a name that exists (compared case-insensitively, as NTLM does).
        public static let userExists = "user-exists"
        /// `passwd` or `del` of a name that does not exist.
        public static let noSuchUser = "no-such-user"
        /// No key file where one was named or looked for.
        public static let keyMissing = "key-missing"
        /// A key file that is not a regular file or is open to group or others.
        public static let keyInsecure = "key-insecure"
        /// A key file whose content is neither 32 raw bytes nor 64 hex digits, or unreadable.
        public static let keyInvalid = "key-invalid"
        /// The store was sealed under another key than the one found.
        public static let keyMismatch = "key-mismatch"
        /// The database could not be created, opened or configured.
        public static let open = "store-open"
        /// Another process holds the database lock beyond the busy timeout.
        public static let busy = "store-busy"
        /// A read or write failed, or the stored data is not what this version writes.
        public static let io = "store-io"
    }

    /// One of `UserStoreError.Code`.
    public let code: String
    /// The extended SQLite result code, or 0 when SQLite was not involved.
    public let sqliteCode: Int32
    /// What went wrong, naming the user, path or mode at fault.
    public let message: String

    /// An error with `code` (one of `Code`) and a message.
    public init(code: String, sqliteCode: Int32 = 0, message: String) {
        self.code = code
        self.sqliteCode = sqliteCode
        self.message = message
    }

    /// `code: message`, with the SQLite code when there is one.
    public var description: String {
        sqliteCode == 0 ? "\(code): \(message)" : "\(code): \(message) (sqlite \(sqliteCode))"
    }
}
