/// The user store's tables and how its sealed columns are bound to their place.
enum UserStoreSchema {
    /// Written to `PRAGMA user_version`; a store with a newer version is refused.
    static let version: Int32 = 1

    /// `ha1_*` and `nt_hash` are SecretBox-sealed (password-equivalent). The userhashes are
    /// `H(user:realm)` in lowercase hex: not secret, indexed for Digest `userhash=true`.
    /// `store_meta` keeps a sealed known value, so a wrong key is caught before any row is
    /// written under it.
    static let create = """
        CREATE TABLE IF NOT EXISTS users(
            name TEXT PRIMARY KEY NOT NULL,
            verifier TEXT NOT NULL,
            digest_realm TEXT,
            ha1_md5 BLOB,
            ha1_sha256 BLOB,
            nt_hash BLOB,
            userhash_md5 TEXT,
            userhash_sha256 TEXT,
            created TEXT,
            updated TEXT
        );
        CREATE INDEX IF NOT EXISTS users_userhash_md5 ON users(userhash_md5);
        CREATE INDEX IF NOT EXISTS users_userhash_sha256 ON users(userhash_sha256);
        CREATE TABLE IF NOT EXISTS store_meta(
            name TEXT PRIMARY KEY NOT NULL,
            value BLOB NOT NULL
        );
        """

    static let selectUsers = """
        SELECT name, verifier, digest_realm, ha1_md5, ha1_sha256, nt_hash, userhash_md5, userhash_sha256
        FROM users
        """

    /// The `store_meta` row holding the sealed key check, and what it seals.
    static let keyCheckName = "key-check"
    static let keyCheckPlaintext = Array("dynrelay user store key check".utf8)

    /// Columns whose values are sealed.
    enum SealedColumn: String, Sendable {
        case ha1MD5 = "ha1_md5"
        case ha1SHA256 = "ha1_sha256"
        case ntHash = "nt_hash"
    }

    /// The associated data a sealed value is bound to: its user and column, so a blob
    /// copied to another row or column does not open. A name holds no NUL (no control
    /// characters), which keeps the encoding unambiguous.
    static func associatedData(user: String, column: SealedColumn) -> [UInt8] {
        Array("dynrelay-users\u{0}users\u{0}\(user)\u{0}\(column.rawValue)".utf8)
    }

    /// The associated data of the key check.
    static let keyCheckAssociatedData = Array("dynrelay-users\u{0}store_meta\u{0}key-check".utf8)
}
