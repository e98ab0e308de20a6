import Foundation
import RelayCore
import RelayServer
import Testing

/// The write side against real SQLite files: operations, errors, file modes, and that no
/// password-equivalent value is ever stored in the clear.
@Suite struct UserStoreTests {
    @Test func addListPasswdDelete() throws {
        let dir = try TempDir()
        let store = try UserFixtures.store(dir)
        #expect(try store.list().isEmpty)
        try store.add(name: "bob", password: "b0b", digestRealm: UserFixtures.realm)
        try store.add(name: "alice", password: "4lice", digestRealm: UserFixtures.realm)
        let listed = try store.list()
        #expect(listed.map(\.name) == ["alice", "bob"])
        #expect(listed.allSatisfy { $0.digestRealm == UserFixtures.realm && $0.created != nil && $0.created == $0.updated })

        try store.setPassword(name: "alice", password: "n3w", digestRealm: "other realm")
        let alice = try #require(try store.list().first)
        #expect(alice.digestRealm == "other realm")
        #expect(alice.updated! > alice.created!)

        try store.delete(name: "bob")
        #expect(try store.list().map(\.name) == ["alice"])
        store.close()
        // Everything survives a reopen.
        #expect(try UserFixtures.store(dir).list().map(\.name) == ["alice"])
    }

    @Test func refusesExistingAndMissingUsers() throws {
        let dir = try TempDir()
        let store = try UserFixtures.store(dir)
        try store.add(name: "alice", password: "pw", digestRealm: UserFixtures.realm)
        #expect(throws: UserStoreError.self) { try store.add(name: "alice", password: "pw2", digestRealm: UserFixtures.realm) }
        do {
            try store.add(name: "ALICE", password: "pw2", digestRealm: UserFixtures.realm)
            Issue.record("a name differing only in case must be refused (NTLM compares case-insensitively)")
        } catch {
            #expect(error.code == UserStoreError.Code.userExists)
            #expect(error.message.contains("'alice'"), "\(error)")
        }
        for operation in [{ try store.setPassword(name: "bob", password: "x", digestRealm: UserFixtures.realm) },
                          { try store.delete(name: "bob") },
                          { try store.delete(name: "Alice") }] {
            do {
                try operation()
                Issue.record("expected no-such-user")
            } catch let error as UserStoreError {
                #expect(error.code == UserStoreError.Code.noSuchUser)
            }
        }
        #expect(try store.list().map(\.name) == ["alice"])
    }

    static let badNames: [String] = [
        "", String(repeating: "a", count: 257), String(repeating: "é", count: 128) + "a",
        "a:b", ":", "a\nb", "a\rb", "a\tb", "a\u{0}b", "a\u{7f}b", "a\u{85}b", "a\u{9f}", "a\u{FFFD}b",
    ]

    @Test("bad user names are refused", arguments: 0..<badNames.count)
    func refusesBadNames(_ index: Int) throws {
        let dir = try TempDir()
        let store = try UserFixtures.store(dir)
        do {
            try store.add(name: Self.badNames[index], password: "pw", digestRealm: UserFixtures.realm)
            Issue.record("accepted \(Self.badNames[index].debugDescription)")
        } catch {
            #expect(error.code == UserStoreError.Code.invalidName)
        }
        #expect(try store.list().isEmpty)
    }

    @Test func acceptsNamesAtTheLimits() throws {
        let dir = try TempDir()
        let store = try UserFixtures.store(dir)
        let names = [String(repeating: "é", count: 128), "a", "DOMAIN\\user", "user@REALM.EXAMPLE", "José Müller", "用户"]
        for name in names {
            try store.add(name: name, password: "pw", digestRealm: UserFixtures.realm)
        }
        #expect(Set(try store.list().map(\.name)) == Set(names))
    }

    @Test func refusesBadPasswords() throws {
        let dir = try TempDir()
        let store = try UserFixtures.store(dir)
        for password in ["", String(repeating: "p", count: 1025), "a\u{0}b"] {
            #expect(throws: UserStoreError.self) { try store.add(name: "alice", password: password, digestRealm: UserFixtures.realm) }
        }
        #expect(throws: UserStoreError.self) { try UserCredentialRules.password(fromBytes: [0x61, 0xff]) }
        #expect(try UserCredentialRules.password(fromBytes: Array("pä".utf8)) == "pä")
        try store.add(name: "alice", password: String(repeating: "p", count: 1024), digestRealm: UserFixtures.realm)
    }

    @Test func databaseIsPrivateAndUsesARollbackJournal() throws {
        let dir = try TempDir()
        let path = dir.path("users.db")
        let previous = umask(0)
        defer { umask(previous) }
        let store = try UserFixtures.store(dir)
        try store.add(name: "alice", password: "pw", digestRealm: UserFixtures.realm)
        #expect(UserFixtures.mode(path) == 0o600)
        #expect(try SQL.query(path, "PRAGMA journal_mode").first?["journal_mode"] == .text("delete"))
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        store.close()

        // An existing file open to others is tightened on the next write-side open.
        #expect(chmod(path, 0o644) == 0)
        _ = try UserFixtures.store(dir)
        #expect(UserFixtures.mode(path) == 0o600)
    }

    @Test func secretsAreNeverStoredInTheClear() throws {
        let dir = try TempDir()
        let path = dir.path("users.db")
        let password = "Sup3r-Secret-Passw0rd!"
        let store = try UserFixtures.store(dir)
        try store.add(name: "alice", password: password, digestRealm: UserFixtures.realm)
        try store.setPassword(name: "alice", password: password, digestRealm: UserFixtures.realm)
        store.close()

        let file = try UserFixtures.bytes(path)
        #expect(UserFixtures.contains(file, Array("alice".utf8)), "the search itself must work")
        var needles: [(String, [UInt8])] = [("password", Array(password.utf8))]
        for algorithm in DigestAlgorithm.allCases {
            let ha1 = algorithm.ha1(user: "alice", realm: UserFixtures.realm, password: password)
            needles.append(("\(algorithm) HA1", ha1))
            needles.append(("\(algorithm) HA1 hex", Array(UserFixtures.hex(ha1).utf8)))
            needles.append(("\(algorithm) HA1 HEX", Array(UserFixtures.hex(ha1).uppercased().utf8)))
        }
        let ntHash = try #require(NTLMVerifier.ntHash(password: password))
        needles.append(("NT hash", ntHash))
        needles.append(("NT hash hex", Array(UserFixtures.hex(ntHash).utf8)))
        for (what, needle) in needles {
            #expect(!UserFixtures.contains(file, needle), "\(what) found in the database file")
        }
        // The sealed columns hold version ‖ nonce ‖ ciphertext ‖ tag, nothing shorter.
        let row = try #require(try SQL.query(path, "SELECT length(ha1_md5) AS a, length(ha1_sha256) AS b, length(nt_hash) AS c FROM users").first)
        let overhead = Int64(SecretBox.overhead)
        let expected: [String: SQLValue] = ["a": .integer(16 + overhead), "b": .integer(32 + overhead), "c": .integer(16 + overhead)]
        #expect(row == expected)
    }

    @Test func refusesAStoreSealedUnderAnotherKey() throws {
        let dir = try TempDir()
        try UserFixtures.store(dir).add(name: "alice", password: "pw", digestRealm: UserFixtures.realm)
        do {
            _ = try UserFixtures.store(dir, key: UserFixtures.otherKey)
            Issue.record("another key must be refused")
        } catch {
            #expect(error.code == UserStoreError.Code.keyMismatch)
        }
    }

    @Test func withoutAKeyListsAndDeletesButCannotSetPasswords() throws {
        let dir = try TempDir()
        try UserFixtures.store(dir).add(name: "alice", password: "pw", digestRealm: UserFixtures.realm)
        let store = try UserFixtures.store(dir, key: nil)
        #expect(try store.list().map(\.name) == ["alice"])
        do {
            try store.setPassword(name: "alice", password: "x", digestRealm: UserFixtures.realm)
            Issue.record("no key, no password change")
        } catch {
            #expect(error.code == UserStoreError.Code.keyMissing)
        }
        try store.delete(name: "alice")
        #expect(try store.list().isEmpty)
    }
}
