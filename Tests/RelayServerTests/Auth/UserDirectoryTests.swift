import Dispatch
import Foundation
import RelayCore
import RelayServer
import Testing

/// The daemon's read side against files the write side made: every lookup, failing
/// closed on tampering, and picking up changes without a reload.
@Suite struct UserDirectoryTests {
    /// A store in `dir` with alice and bob, and the key written where the directory finds it.
    static func populated() throws -> TempDir {
        let dir = try TempDir()
        try UserFixtures.writeStateKey(dir)
        let store = try UserFixtures.store(dir)
        try store.add(name: "alice", password: "4lice-pw", digestRealm: UserFixtures.realm)
        try store.add(name: "Bob", password: "b0b-pw", digestRealm: UserFixtures.realm)
        store.close()
        return dir
    }

    @Test func answersEveryKindOfLookup() throws {
        let dir = try Self.populated()
        let users = UserFixtures.directory(dir)
        #expect(users.problem == nil)
        #expect(users.userCount == 2)

        #expect(users.verifyBasic(user: "alice", password: "4lice-pw") == .ok(user: "alice"))
        #expect(users.verifyBasic(user: "alice", password: "4lice-pW") == .failed(reason: .badPassword))
        #expect(users.verifyBasic(user: "Alice", password: "4lice-pw") == .failed(reason: .unknownUser), "Basic names are exact")
        #expect(users.verifyBasic(user: "carol", password: "x") == .failed(reason: .unknownUser))
        #expect(users.basicVerifier(for: "Bob")?.verify("b0b-pw") == true)

        for algorithm in DigestAlgorithm.allCases {
            #expect(users.digestHA1(user: "alice", realm: UserFixtures.realm, algorithm: algorithm)
                == algorithm.ha1(user: "alice", realm: UserFixtures.realm, password: "4lice-pw"))
            #expect(users.digestHA1(user: "alice", realm: "another realm", algorithm: algorithm) == nil)
            #expect(users.digestHA1(user: "carol", realm: UserFixtures.realm, algorithm: algorithm) == nil)

            let userhash = algorithm.userhash(user: "Bob", realm: UserFixtures.realm)
            #expect(users.userForUserhash(userhash, realm: UserFixtures.realm, algorithm: algorithm) == "Bob")
            #expect(users.userForUserhash(userhash.uppercased(), realm: UserFixtures.realm, algorithm: algorithm) == "Bob")
            #expect(users.userForUserhash(userhash, realm: "another realm", algorithm: algorithm) == nil)
            #expect(users.userForUserhash(algorithm.userhash(user: "carol", realm: UserFixtures.realm),
                                          realm: UserFixtures.realm, algorithm: algorithm) == nil)
        }
        let otherAlgorithm = DigestAlgorithm.md5.userhash(user: "Bob", realm: UserFixtures.realm)
        #expect(users.userForUserhash(otherAlgorithm, realm: UserFixtures.realm, algorithm: .sha256) == nil)

        let expectedNT = try #require(NTLMVerifier.ntHash(password: "b0b-pw"))
        for typed in ["Bob", "bob", "BOB", "bOB"] {
            #expect(users.ntlmAccount(user: typed) == UserDirectory.NTLMAccount(name: "Bob", ntHash: expectedNT), "\(typed)")
        }
        #expect(users.ntHash(user: "ALICE") == NTLMVerifier.ntHash(password: "4lice-pw"))
        #expect(users.ntHash(user: "carol") == nil)
    }

    @Test func digestAuthenticatorLogsInThroughTheDirectory() throws {
        let dir = try Self.populated()
        let users = UserFixtures.directory(dir)
        // The lookups have exactly the shapes DigestAuthenticator takes.
        let ha1: DigestAuthenticator.HA1Lookup = users.digestHA1
        let userhash: DigestAuthenticator.UserhashLookup = users.userForUserhash
        #expect(ha1("alice", UserFixtures.realm, .sha256) == DigestAlgorithm.sha256.ha1(user: "alice", realm: UserFixtures.realm, password: "4lice-pw"))
        #expect(userhash(DigestAlgorithm.sha256.userhash(user: "alice", realm: UserFixtures.realm), UserFixtures.realm, .sha256) == "alice")
    }

    @Test func noDatabaseMeansNoUsersUntilOneIsAdded() throws {
        let dir = try TempDir()
        let users = UserFixtures.directory(dir)
        #expect(users.userCount == 0)
        #expect(users.problem == nil)
        #expect(users.verifyBasic(user: "alice", password: "pw") == .failed(reason: .unknownUser))
        #expect(users.digestHA1(user: "alice", realm: UserFixtures.realm, algorithm: .md5) == nil)

        // What `dynrelay users add` does on a fresh host: make the key, then the store.
        let key = try UserStoreKeySource(explicitPath: nil, stateDir: dir.url.path, credentialsDirectory: nil).loadOrCreate()
        try UserStore(path: dir.path("users.db"), key: key, iterations: UserFixtures.iterations)
            .add(name: "alice", password: "pw", digestRealm: UserFixtures.realm)
        #expect(users.verifyBasic(user: "alice", password: "pw") == .ok(user: "alice"))
        #expect(users.digestHA1(user: "alice", realm: UserFixtures.realm, algorithm: .md5)
            == DigestAlgorithm.md5.ha1(user: "alice", realm: UserFixtures.realm, password: "pw"))
    }

    @Test func picksUpChangesOnlyOncePerInterval() throws {
        let dir = try Self.populated()
        let users = UserFixtures.directory(dir, interval: .seconds(3600))
        #expect(users.verifyBasic(user: "alice", password: "4lice-pw") == .ok(user: "alice"))
        let store = try UserFixtures.store(dir)
        // Same length as before, within one mtime tick: the change counter tells.
        try store.setPassword(name: "alice", password: "4lice-PW", digestRealm: UserFixtures.realm)
        try store.delete(name: "Bob")
        #expect(users.verifyBasic(user: "alice", password: "4lice-pw") == .ok(user: "alice"), "not yet checked again")
        #expect(users.userCount == 2)
        users.refreshNow()
        #expect(users.verifyBasic(user: "alice", password: "4lice-PW") == .ok(user: "alice"))
        #expect(users.verifyBasic(user: "alice", password: "4lice-pw") == .failed(reason: .badPassword))
        #expect(users.ntHash(user: "bob") == nil)
        #expect(users.userCount == 1)
    }

    @Test func reloadsOnEveryCommitWhenChecksAreDue() throws {
        let dir = try Self.populated()
        let users = UserFixtures.directory(dir)
        let store = try UserFixtures.store(dir)
        for round in 0..<5 {
            try store.setPassword(name: "alice", password: "round-\(round)", digestRealm: UserFixtures.realm)
            #expect(users.digestHA1(user: "alice", realm: UserFixtures.realm, algorithm: .sha256)
                == DigestAlgorithm.sha256.ha1(user: "alice", realm: UserFixtures.realm, password: "round-\(round)"))
        }
        try FileManager.default.removeItem(atPath: dir.path("users.db"))
        #expect(users.userCount == 0, "a deleted store has no users")
    }

    @Test func tamperedOrSwappedSealedValuesFailClosed() throws {
        let dir = try Self.populated()
        let path = dir.path("users.db")
        let users = UserFixtures.directory(dir)
        #expect(users.ntHash(user: "alice") != nil)

        // Bob's sealed values copied into alice's row: valid ciphertexts, wrong place.
        try SQL.exec(path, """
            UPDATE users SET ha1_md5 = (SELECT ha1_md5 FROM users WHERE name = 'Bob'),
                             ha1_sha256 = (SELECT ha1_sha256 FROM users WHERE name = 'Bob')
            WHERE name = 'alice'
            """)
        // Alice's NT hash with one bit of its tag flipped.
        let row = try #require(try SQL.query(path, "SELECT hex(nt_hash) AS h FROM users WHERE name = 'alice'").first)
        var sealed = Array(try #require(row["h"]?.string).utf8)
        sealed[sealed.count - 1] = sealed[sealed.count - 1] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
        try SQL.exec(path, "UPDATE users SET nt_hash = X'\(String(decoding: sealed, as: UTF8.self))' WHERE name = 'alice'")

        for algorithm in DigestAlgorithm.allCases {
            #expect(users.digestHA1(user: "alice", realm: UserFixtures.realm, algorithm: algorithm) == nil)
            #expect(users.digestHA1(user: "Bob", realm: UserFixtures.realm, algorithm: algorithm) != nil, "bob is untouched")
        }
        #expect(users.ntlmAccount(user: "alice") == nil)
        #expect(users.ntHash(user: "bob") != nil)
    }

    @Test func withoutTheKeySealedLookupsFailAndTheProblemIsReported() throws {
        let dir = try Self.populated()
        #expect(chmod(dir.path(UserStoreKeySource.stateFileName), 0o644) == 0)
        let users = UserFixtures.directory(dir)
        #expect(users.problem?.code == UserStoreError.Code.keyInsecure)
        #expect(users.digestHA1(user: "alice", realm: UserFixtures.realm, algorithm: .md5) == nil)
        #expect(users.ntHash(user: "alice") == nil)
        // The PBKDF2 verifier is not sealed: Basic does not need the key.
        #expect(users.verifyBasic(user: "alice", password: "4lice-pw") == .ok(user: "alice"))

        // Fixing the mode is enough; the next check finds the key.
        #expect(chmod(dir.path(UserStoreKeySource.stateFileName), 0o600) == 0)
        #expect(users.ntHash(user: "alice") != nil)
        #expect(users.problem == nil)
    }

    @Test func aWrongKeyIsReportedAndOpensNothing() throws {
        let dir = try Self.populated()
        try FileManager.default.removeItem(atPath: dir.path(UserStoreKeySource.stateFileName))
        try UserFixtures.writeStateKey(dir, hexOf: [UInt8](repeating: 0x11, count: 32))
        let users = UserFixtures.directory(dir)
        #expect(users.problem?.code == UserStoreError.Code.keyMismatch)
        #expect(users.digestHA1(user: "alice", realm: UserFixtures.realm, algorithm: .sha256) == nil)
        #expect(users.ntHash(user: "alice") == nil)
    }

    @Test func aFileThatIsNotAStoreMeansNoUsers() throws {
        let dir = try TempDir()
        try UserFixtures.writeStateKey(dir)
        try UserFixtures.writeFile(dir.path("users.db"), Array("not a database, just text padding it out".utf8), mode: 0o600)
        let users = UserFixtures.directory(dir)
        #expect(users.userCount == 0)
        #expect(users.problem != nil)
    }

    @Test func concurrentLookupsDuringWritesStayConsistent() throws {
        let dir = try Self.populated()
        let users = UserFixtures.directory(dir)
        let expected = DigestAlgorithm.md5.ha1(user: "Bob", realm: UserFixtures.realm, password: "b0b-pw")
        let wrong = Mutexed()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            let writer = worker == 0 ? try? UserFixtures.store(dir) : nil
            for round in 0..<40 {
                if worker == 0 {
                    try? writer?.setPassword(name: "alice", password: "pw-\(round)", digestRealm: UserFixtures.realm)
                } else if users.digestHA1(user: "Bob", realm: UserFixtures.realm, algorithm: .md5) != expected {
                    wrong.increment()
                }
            }
        }
        #expect(wrong.value == 0, "bob's HA1 must be answered right while alice's row changes")
    }
}

/// A counter threads can bump.
final class Mutexed: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
