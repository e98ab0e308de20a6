#if canImport(Glibc)
import Glibc
#endif
import RelayCore

/// One user as `dynrelay users list` shows it: never a verifier, hash or sealed value.
public struct UserSummary: Sendable, Equatable {
    /// The user name, exactly as stored (the principal the audit trail records).
    public var name: String
    /// The Digest realm the user's HA1s were computed for.
    public var digestRealm: String?
    /// When the user was added (UTC, audit timestamp format).
    public var created: String?
    /// When the password was last set (UTC, audit timestamp format).
    public var updated: String?

    /// A summary row.
    public init(name: String, digestRealm: String?, created: String?, updated: String?) {
        self.name = name
        self.digestRealm = digestRealm
        self.created = created
        self.updated = updated
    }
}

/// The write side of the built-in user store, used by `dynrelay users`.
///
/// A SQLite database (mode 0600, rollback journal rather than WAL: a running daemon's
/// `UserDirectory` notices changes from the main file alone) with one row per user: a
/// PBKDF2 verifier for Basic, and SecretBox-sealed Digest HA1s (MD5, SHA-256) and NT hash,
/// each bound to its user and column. Every change runs in one `BEGIN IMMEDIATE`
/// transaction, so concurrent `dynrelay users` runs serialize instead of racing.
/// Single-threaded: one instance per command.
public final class UserStore {
    /// The database file.
    public let path: String
    private let database: UserDatabase
    private let box: SecretBox?
    private let iterations: Int

    static let busyTimeoutMillis: Int32 = 5_000

    /// Opens (creating if missing) the store at `path`, whose sealed columns use `key`.
    /// `iterations` is the PBKDF2 cost of new Basic verifiers. Throws `key-mismatch` when
    /// the store was sealed under another key. Without a key the store can still list and
    /// delete users, but not set passwords.
    public init(path: String, key: SecretBox?, iterations: Int = PasswordVerifier.defaultIterations) throws(UserStoreError) {
        precondition(PasswordVerifier.iterationRange.contains(iterations), "PBKDF2 iterations out of range")
        self.path = path
        box = key
        self.iterations = iterations
        try Self.createPrivateFile(path)
        database = try UserDatabase(path: path, create: true, busyMillis: Self.busyTimeoutMillis)
        do throws(UserStoreError) {
            try configure()
        } catch {
            database.close()
            throw error
        }
    }

    deinit {
        database.close()
    }

    /// Adds `name` with `password`; its Digest HA1s are computed for `digestRealm`.
    /// Throws `user-exists` when the name, compared case-insensitively as NTLM compares
    /// it, is taken.
    public func add(name: String, password: String, digestRealm: String) throws(UserStoreError) {
        try UserCredentialRules.validate(name: name)
        try UserCredentialRules.validate(password: password)
        let secrets = try secrets(name: name, password: password, digestRealm: digestRealm)
        let now = Self.now()
        try database.transaction(immediate: true) { () throws(UserStoreError) in
            let key = NTLMUserName.comparisonKey(name)
            var taken: String?
            try database.query("SELECT name FROM users") { row in
                if let existing = row.text(0), NTLMUserName.comparisonKey(existing) == key { taken = existing }
            }
            if let taken {
                let detail = taken == name ? "" : " as '\(taken)' (names compare case-insensitively)"
                throw UserStoreError(code: UserStoreError.Code.userExists, message: "user '\(name)' already exists\(detail)")
            }
            try database.run("""
                INSERT INTO users(name, verifier, digest_realm, ha1_md5, ha1_sha256, nt_hash,
                                  userhash_md5, userhash_sha256, created, updated)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
                """, [.text(name)] + secrets + [.text(now)])
        }
    }

    /// Replaces the password of `name` (matched exactly), recomputing its HA1s for
    /// `digestRealm`. Throws `no-such-user` when there is no such user.
    public func setPassword(name: String, password: String, digestRealm: String) throws(UserStoreError) {
        try UserCredentialRules.validate(name: name)
        try UserCredentialRules.validate(password: password)
        let secrets = try secrets(name: name, password: password, digestRealm: digestRealm)
        let changed = try database.transaction(immediate: true) { () throws(UserStoreError) in
            try database.run("""
                UPDATE users SET verifier = ?2, digest_realm = ?3, ha1_md5 = ?4, ha1_sha256 = ?5, nt_hash = ?6,
                                 userhash_md5 = ?7, userhash_sha256 = ?8, updated = ?9
                WHERE name = ?1
                """, [.text(name)] + secrets + [.text(Self.now())])
        }
        guard changed == 1 else { throw Self.noSuchUser(name) }
    }

    /// Deletes `name` (matched exactly). Throws `no-such-user` when there is no such user.
    public func delete(name: String) throws(UserStoreError) {
        let changed = try database.transaction(immediate: true) { () throws(UserStoreError) in
            try database.run("DELETE FROM users WHERE name = ?1", [.text(name)])
        }
        guard changed == 1 else { throw Self.noSuchUser(name) }
    }

    /// Every user, sorted by name.
    public func list() throws(UserStoreError) -> [UserSummary] {
        var users: [UserSummary] = []
        try database.query("SELECT name, digest_realm, created, updated FROM users ORDER BY name") { row in
            guard let name = row.text(0) else { return }
            users.append(UserSummary(name: name, digestRealm: row.text(1), created: row.text(2), updated: row.text(3)))
        }
        return users
    }

    /// Closes the database; the store is unusable afterwards.
    public func close() {
        database.close()
    }

    // MARK: - Steps

    /// Bind values 2...8: verifier, realm, the three sealed values, the two userhashes.
    private func secrets(name: String, password: String, digestRealm: String) throws(UserStoreError) -> [UserDatabase.Value] {
        guard let box else {
            throw UserStoreError(code: UserStoreError.Code.keyMissing, message: "no user store key to seal \(name)'s hashes with")
        }
        let verifier = PasswordVerifier(password: password, iterations: iterations)
        func sealed(_ value: [UInt8]?, _ column: UserStoreSchema.SealedColumn) -> UserDatabase.Value {
            .blob(value.map { box.seal($0, associatedData: UserStoreSchema.associatedData(user: name, column: column)) })
        }
        return [
            .text(verifier.encoded),
            .text(digestRealm),
            sealed(DigestAlgorithm.md5.ha1(user: name, realm: digestRealm, password: password), .ha1MD5),
            sealed(DigestAlgorithm.sha256.ha1(user: name, realm: digestRealm, password: password), .ha1SHA256),
            // Without OpenSSL's legacy provider there is no MD4: the user simply has no NTLM.
            sealed(NTLMVerifier.ntHash(password: password), .ntHash),
            .text(DigestAlgorithm.md5.userhash(user: name, realm: digestRealm)),
            .text(DigestAlgorithm.sha256.userhash(user: name, realm: digestRealm)),
        ]
    }

    private func configure() throws(UserStoreError) {
        // DELETE, not WAL: with WAL a commit may only touch the -wal file, and the daemon
        // watches the main file's mtime and size.
        let mode = try database.scalarText("PRAGMA journal_mode=DELETE")
        guard mode == "delete" else {
            throw UserStoreError(code: UserStoreError.Code.open, message: "\(path): journal_mode is \(mode ?? "unknown"), DELETE required")
        }
        try database.exec("PRAGMA synchronous=FULL")
        try database.transaction(immediate: true) { () throws(UserStoreError) in
            let version = Int32(try database.scalarText("PRAGMA user_version").flatMap { Int32($0) } ?? 0)
            guard version <= UserStoreSchema.version else {
                throw UserStoreError(code: UserStoreError.Code.open,
                                     message: "\(path) has schema version \(version); this dynrelay knows \(UserStoreSchema.version)")
            }
            try database.exec(UserStoreSchema.create)
            try database.exec("PRAGMA user_version=\(UserStoreSchema.version)")
            try checkKey()
        }
    }

    /// Seals the key check on first use; afterwards refuses a key that cannot open it, so
    /// rows are never written under two different keys.
    private func checkKey() throws(UserStoreError) {
        guard let box else { return }
        var stored: [UInt8]?
        try database.query("SELECT value FROM store_meta WHERE name = ?1", [.text(UserStoreSchema.keyCheckName)]) { row in
            stored = row.blob(0)
        }
        if let stored {
            guard box.open(stored, associatedData: UserStoreSchema.keyCheckAssociatedData) == UserStoreSchema.keyCheckPlaintext else {
                throw UserStoreError(code: UserStoreError.Code.keyMismatch,
                                     message: "\(path) was sealed with another key than the one found")
            }
            return
        }
        let sealed = box.seal(UserStoreSchema.keyCheckPlaintext, associatedData: UserStoreSchema.keyCheckAssociatedData)
        try database.run("INSERT INTO store_meta(name, value) VALUES (?1, ?2)",
                         [.text(UserStoreSchema.keyCheckName), .blob(sealed)])
    }

    /// Creates the file 0600 before SQLite sees it, and tightens an existing one: SQLite
    /// gives its journal the database file's mode, so both stay private.
    private static func createPrivateFile(_ path: String) throws(UserStoreError) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw UserStoreError(code: UserStoreError.Code.open, message: "open \(path): \(String(cString: strerror(errno)))")
        }
        defer { Glibc.close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & 0o077 != 0, fchmod(fd, 0o600) != 0 {
            throw UserStoreError(code: UserStoreError.Code.open, message: "chmod 600 \(path): \(String(cString: strerror(errno)))")
        }
    }

    private static func now() -> String {
        AuditTimestamp.format(micros: AuditTimestamp.nowMicros())
    }

    private static func noSuchUser(_ name: String) -> UserStoreError {
        UserStoreError(code: UserStoreError.Code.noSuchUser, message: "no user '\(name)'")
    }
}
