import Dispatch
import RelayCore
import RelayIO
@testable import RelayServer
import Testing

/// digest_file_auth, the real Debian binary: HA1 lookups, with and without channel ids.
@Suite struct DigestHelperTests {
    let dir: TempDir
    let plain: ChildCommand
    let hashed: ChildCommand

    /// The plaintext file (`user:password`, the helper computes HA1 for any realm) and the
    /// `-c` file (`user:realm:HA1`, one realm per line).
    init() throws {
        dir = try TempDir()
        let helper = try SquidHelpers.path("digest_file_auth")
        try SquidHelpers.write("# users\nalice:secret\n\nbob:p a%s\n", to: dir.path("plain"))
        let carol = AuthHex.encode(SquidHelpers.md5("carol:Corp:pw"))
        try SquidHelpers.write("carol:Corp:\(carol)\n", to: dir.path("hashed"))
        plain = ChildCommand(executable: helper, arguments: [dir.path("plain")])
        hashed = ChildCommand(executable: helper, arguments: ["-c", dir.path("hashed")])
    }

    func lookup(_ pool: ConcurrentHelperPool, _ user: String, _ realm: String) throws -> HelperDigestAnswer {
        try Answers.one { pool.digestHA1(user: user, realm: realm, completion: $0) }
    }

    @Test(arguments: [0, 4])
    func returnsHA1FromAPlaintextFile(concurrency: Int) throws {
        let pool = SquidHelpers.concurrentPool(plain, processes: 1, concurrency: concurrency)
        defer { pool.close() }
        #expect(try lookup(pool, "alice", "Corp") == .ha1(SquidHelpers.md5("alice:Corp:secret")))
        #expect(try lookup(pool, "alice", "Other Realm") == .ha1(SquidHelpers.md5("alice:Other Realm:secret")))
        #expect(try lookup(pool, "bob", "Corp") == .ha1(SquidHelpers.md5("bob:Corp:p a%s")))
        #expect(try lookup(pool, "mallory", "Corp") == .err(message: "No such user"))
    }

    @Test func returnsHA1FromAHashedFileForItsRealmOnly() throws {
        let pool = SquidHelpers.concurrentPool(hashed, processes: 1, concurrency: 2)
        defer { pool.close() }
        #expect(try lookup(pool, "carol", "Corp") == .ha1(SquidHelpers.md5("carol:Corp:pw")))
        #expect(try lookup(pool, "carol", "Other") == .err(message: "No such user"))
    }

    @Test func quotesAndControlCharactersAreRefused() throws {
        let pool = SquidHelpers.concurrentPool(plain, processes: 1, concurrency: 2)
        defer { pool.close() }
        #expect(try lookup(pool, "alice\"", "Corp") == .invalidInput(.quote))
        #expect(try lookup(pool, "alice", "Corp\\") == .invalidInput(.quote))
        #expect(try lookup(pool, "alice", "Corp\n1 \"alice\":\"x\"") == .invalidInput(.controlCharacter))
        #expect(try lookup(pool, "", "Corp") == .invalidInput(.empty))
    }

    /// Channel ids for real: 2 processes × 8 channels, 200 lookups at once, each answer the
    /// HA1 of its own user and realm.
    @Test func manyParallelLookupsOverChannelsGetTheirOwnAnswers() throws {
        let pool = SquidHelpers.concurrentPool(plain, processes: 2, concurrency: 8)
        defer { pool.close() }
        let answers = Answers<HelperDigestAnswer>()
        DispatchQueue.concurrentPerform(iterations: 200) { index in
            let user = index % 3 == 2 ? "nobody" : (index % 3 == 0 ? "alice" : "bob")
            pool.digestHA1(user: user, realm: "Realm \(index)", completion: answers.callback(index))
        }
        let got = try answers.wait(200)
        for index in 0..<200 {
            let expected: HelperDigestAnswer = switch index % 3 {
            case 0: .ha1(SquidHelpers.md5("alice:Realm \(index):secret"))
            case 1: .ha1(SquidHelpers.md5("bob:Realm \(index):p a%s"))
            default: .err(message: "No such user")
            }
            #expect(got[index] == expected, "lookup \(index)")
        }
        #expect(pool.pids().count == 2)
    }

    @Test func anHA1IsNeverPrinted() {
        let answer = HelperDigestAnswer.ha1(SquidHelpers.md5("alice:Corp:secret"))
        #expect(answer.description == "ha1(16 bytes)")
    }
}
