import Foundation
import Glibc
import RelayCore
import RelayIO
@testable import RelayServer
import Testing

/// basic_ncsa_auth, the real Debian binary, behind a ConcurrentHelperPool.
@Suite struct BasicHelperTests {
    let dir: TempDir
    let command: ChildCommand

    /// Users in every hash format basic_ncsa_auth reads: APR1 (htpasswd's default), MD5-crypt,
    /// SHA-256-crypt; `spacey` has a password with spaces and `%` in it.
    init() throws {
        dir = try TempDir()
        let htpasswd = dir.path("htpasswd")
        try SquidHelpers.write("""
            alice:\(try SquidHelpers.opensslPasswd("-apr1", "secret"))
            bob:\(try SquidHelpers.opensslPasswd("-1", "hunter2"))
            carol:\(try SquidHelpers.opensslPasswd("-5", "s3cret!"))
            spacey:\(try SquidHelpers.opensslPasswd("-apr1", "p a%20s %s~\"x"))
            dörte:\(try SquidHelpers.opensslPasswd("-5", "grüße"))

            """, to: htpasswd)
        command = ChildCommand(executable: try SquidHelpers.path("basic_ncsa_auth"), arguments: [htpasswd])
    }

    func check(_ pool: ConcurrentHelperPool, _ user: String, _ password: String) throws -> HelperVerdict {
        try Answers.one { pool.basic(user: user, password: password, completion: $0) }
    }

    @Test func answersOKForRightPasswordsAndERRForWrongOnesAndUnknownUsers() throws {
        let pool = SquidHelpers.concurrentPool(command, processes: 1, concurrency: 0)
        defer { pool.close() }
        #expect(try check(pool, "alice", "secret") == .ok(notes: [:]))
        #expect(try check(pool, "bob", "hunter2") == .ok(notes: [:]))
        #expect(try check(pool, "carol", "s3cret!") == .ok(notes: [:]))
        #expect(try check(pool, "dörte", "grüße") == .ok(notes: [:]))
        #expect(try check(pool, "alice", "Secret") == .err(message: "Wrong password"))
        // "alice " has no password word: basic_ncsa_auth says a bare ERR.
        #expect(try check(pool, "alice", "") == .err(message: nil))
        #expect(try check(pool, "mallory", "secret") == .err(message: "No such user"))
    }

    @Test func passwordsWithSpacesAndPercentReachTheHelperIntact() throws {
        let pool = SquidHelpers.concurrentPool(command, processes: 1, concurrency: 0)
        defer { pool.close() }
        #expect(try check(pool, "spacey", "p a%20s %s~\"x") == .ok(notes: [:]))
        // The escaped spelling is a different password, not the same one twice.
        #expect(try check(pool, "spacey", "p%20a%2520s%20%25s~\"x") == .err(message: "Wrong password"))
    }

    @Test func controlCharactersAreRefusedBeforeReachingTheHelper() throws {
        let pool = SquidHelpers.concurrentPool(command, processes: 1, concurrency: 0)
        defer { pool.close() }
        // Written raw, each would be a second request line ("alice secret") answered OK.
        #expect(try check(pool, "x\nalice", "secret") == .invalidInput(.controlCharacter))
        #expect(try check(pool, "mallory", "x\nalice secret") == .invalidInput(.controlCharacter))
        #expect(try check(pool, "mallory", "x\r\nalice secret") == .invalidInput(.controlCharacter))
        #expect(try check(pool, "alice\0", "secret") == .invalidInput(.controlCharacter))
        #expect(try check(pool, "", "secret") == .invalidInput(.empty))
        #expect(try check(pool, String(repeating: "a", count: 257), "secret") == .invalidInput(.tooLong))
        // Still in step: had anything leaked, this answer would be an earlier line's.
        #expect(try check(pool, "alice", "wrong") == .err(message: "Wrong password"))
        #expect(try check(pool, "alice", "secret") == .ok(notes: [:]))
    }

    /// basic_ncsa_auth reads no channel ids (a `0 alice secret` line is user `0`), so its
    /// parallelism comes from processes: 200 requests over 4 of them, every answer its own.
    @Test func manyParallelRequestsAcrossProcessesAreAnsweredInStep() throws {
        let pool = SquidHelpers.concurrentPool(command, processes: 4, concurrency: 0)
        defer { pool.close() }
        let cases: [(String, String, HelperVerdict)] = [
            ("alice", "secret", .ok(notes: [:])), ("alice", "nope", .err(message: "Wrong password")),
            ("bob", "hunter2", .ok(notes: [:])), ("nobody", "x", .err(message: "No such user")),
            ("spacey", "p a%20s %s~\"x", .ok(notes: [:])),
        ]
        let answers = Answers<HelperVerdict>()
        DispatchQueue.concurrentPerform(iterations: 200) { index in
            let (user, password, _) = cases[index % cases.count]
            pool.basic(user: user, password: password, completion: answers.callback(index))
        }
        let got = try answers.wait(200)
        for index in 0..<200 {
            #expect(got[index] == cases[index % cases.count].2, "request \(index)")
        }
        #expect(pool.pids().count == 4)
    }

    @Test func aFullQueueIsRefusedAsOverloaded() throws {
        let pool = SquidHelpers.concurrentPool(command, processes: 1, concurrency: 0, maxQueued: 2)
        defer { pool.close() }
        let answers = Answers<HelperVerdict>()
        for index in 0..<20 {
            pool.basic(user: "alice", password: "secret", completion: answers.callback(index))
        }
        let got = try answers.wait(20)
        let overloaded = got.values.filter { $0 == .overloaded }.count
        #expect(got.values.filter { $0 == .ok(notes: [:]) }.count + overloaded == 20)
        // One in flight and two waiting at most; the rest arrived while those were taken.
        #expect(overloaded >= 1 && overloaded <= 17)
    }

    @Test func aKilledHelperFailsItsRequestAndIsReplaced() throws {
        // A helper stuck on a request: `sleep` never reads it, so kill -9 lands mid-request.
        let stuck = SquidHelpers.concurrentPool(ChildCommand(executable: "/bin/sleep", arguments: ["1000"]),
                                                processes: 1, concurrency: 0)
        defer { stuck.close() }
        #expect(eventually { stuck.pids().count == 1 })
        let stuckPid = try #require(stuck.pids().first)
        let inFlight = Answers<HelperVerdict>()
        stuck.basic(user: "alice", password: "secret", completion: inFlight.callback(0))
        usleep(100_000)
        kill(stuckPid, SIGKILL)
        guard case .helperBroken = try #require(try inFlight.wait(1)[0]) else {
            Issue.record("the request in flight was not failed as broken")
            return
        }
        #expect(eventually { processIsGone(stuckPid) }, "the killed helper was not reaped")

        let pool = SquidHelpers.concurrentPool(command, processes: 1, concurrency: 0)
        defer { pool.close() }
        #expect(try check(pool, "alice", "secret") == .ok(notes: [:]))
        let first = try #require(pool.pids().first)
        kill(first, SIGKILL)
        // Once the death is seen (a request racing it would be lost with the child), the next
        // request waits for the restart (at most a second) and succeeds on a new child.
        #expect(eventually { pool.pids().first != first })
        #expect(try check(pool, "alice", "secret") == .ok(notes: [:]))
        let second = try #require(pool.pids().first)
        #expect(second != first)
        #expect(eventually { processIsGone(first) }, "the killed helper was not reaped")
    }

    @Test func aHelperThatExitsAtOnceIsRestartedRarelyAndRequestsFailFast() throws {
        let pool = SquidHelpers.concurrentPool(ChildCommand(executable: "/bin/false"), processes: 2, concurrency: 0)
        defer { pool.close() }
        usleep(300_000)
        let started = Date()
        for _ in 0..<5 {
            guard case .helperBroken = try check(pool, "alice", "secret") else {
                Issue.record("a request to /bin/false was not answered as a broken helper")
                return
            }
        }
        // Failing fast, not after the 10 s request timeout.
        #expect(Date().timeIntervalSince(started) < 5)
        usleep(1_500_000)
        // Starts at 0 s, 1 s and 3 s at most: a spinning restart loop would count hundreds.
        let starts = pool.starts()
        #expect(starts.allSatisfy { $0 >= 1 && $0 <= 3 }, "starts per process: \(starts)")
    }

    @Test func aMissingBinaryIsABrokenHelperNotACrash() throws {
        let pool = SquidHelpers.concurrentPool(ChildCommand(executable: "/nonexistent/basic_auth"),
                                               processes: 1, concurrency: 0)
        defer { pool.close() }
        guard case .helperBroken = try check(pool, "alice", "secret") else {
            Issue.record("a missing helper binary did not answer as broken")
            return
        }
    }

    @Test func aRequestTheHelperNeverAnswersTimesOut() throws {
        let pool = SquidHelpers.concurrentPool(ChildCommand(executable: "/bin/sleep", arguments: ["1000"]),
                                               processes: 1, concurrency: 0, timeout: .milliseconds(300))
        defer { pool.close() }
        #expect(eventually { pool.pids().count == 1 })
        let first = try #require(pool.pids().first)
        #expect(try check(pool, "alice", "secret") == .helperBroken(reason: "helper did not answer in time"))
        // Without channel ids a late answer would be taken for the next request's: replaced.
        #expect(eventually { processIsGone(first) })
    }

    @Test func closeKillsAndReapsEveryChild() throws {
        let pool = SquidHelpers.concurrentPool(command, processes: 3, concurrency: 0)
        #expect(eventually { pool.pids().count == 3 })
        let pids = pool.pids()
        pool.close()
        #expect(eventually { pids.allSatisfy(processIsGone) }, "children left behind: \(pids)")
        #expect(try check(pool, "alice", "secret") == .helperBroken(reason: "helper closed"))
    }
}
