import RelayCore

/// The user store as one read saw it: verifiers parsed, secrets still sealed, and the
/// indexes lookups need. Immutable once built, so threads share it freely.
struct UserSnapshot: Sendable {
    /// One user's row.
    struct Entry: Sendable {
        let name: String
        /// Nil when the stored verifier does not parse: Basic then fails for this user.
        let verifier: PasswordVerifier?
        let digestRealm: String?
        let ha1MD5: [UInt8]?
        let ha1SHA256: [UInt8]?
        let ntHash: [UInt8]?
    }

    private(set) var entries: [String: Entry] = [:]
    /// NTLM comparison key → stored name. Keys two stored names share are left out, so an
    /// ambiguous NTLM name matches no one.
    private(set) var ntlmNames: [String: String] = [:]
    private(set) var userhashMD5: [String: String] = [:]
    private(set) var userhashSHA256: [String: String] = [:]
    /// The sealed key check, when the store has one.
    private(set) var keyCheck: [UInt8]?

    static let empty = UserSnapshot()

    func entry(named name: String) -> Entry? { entries[name] }

    func name(forNTLMUser user: String) -> String? { ntlmNames[NTLMUserName.comparisonKey(user)] }

    func name(forUserhash hex: String, algorithm: DigestAlgorithm) -> String? {
        let lowered = String(decoding: hex.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
        switch algorithm {
        case .md5: return userhashMD5[lowered]
        case .sha256: return userhashSHA256[lowered]
        }
    }

    /// Reads the store at `path` in one read transaction. A database without the users
    /// table (a file the CLI has only just created) reads as no users.
    static func load(path: String, busyMillis: Int32) throws(UserStoreError) -> UserSnapshot {
        let database = try UserDatabase(path: path, create: false, busyMillis: busyMillis)
        defer { database.close() }
        // The daemon only ever reads; SQLite may still roll back a hot journal left by a
        // crashed `dynrelay users`, which query_only allows.
        try database.exec("PRAGMA query_only=1")
        return try database.transaction(immediate: false) { () throws(UserStoreError) in
            var snapshot = UserSnapshot()
            var hasTable = false
            try database.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'users'") { _ in hasTable = true }
            guard hasTable else { return snapshot }
            var ambiguous: Set<String> = []
            try database.query(UserStoreSchema.selectUsers) { row in
                guard let name = row.text(0) else { return }
                let entry = Entry(name: name, verifier: row.text(1).flatMap(PasswordVerifier.init(encoded:)),
                                  digestRealm: row.text(2), ha1MD5: row.blob(3), ha1SHA256: row.blob(4), ntHash: row.blob(5))
                snapshot.entries[name] = entry
                let key = NTLMUserName.comparisonKey(name)
                if snapshot.ntlmNames.updateValue(name, forKey: key) != nil { ambiguous.insert(key) }
                if let hash = row.text(6) { snapshot.userhashMD5[hash.lowercased()] = name }
                if let hash = row.text(7) { snapshot.userhashSHA256[hash.lowercased()] = name }
            }
            for key in ambiguous { snapshot.ntlmNames[key] = nil }
            var hasMeta = false
            try database.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_meta'") { _ in hasMeta = true }
            if hasMeta {
                try database.query("SELECT value FROM store_meta WHERE name = ?1", [.text(UserStoreSchema.keyCheckName)]) { row in
                    snapshot.keyCheck = row.blob(0)
                }
            }
            return snapshot
        }
    }
}
