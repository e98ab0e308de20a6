import Testing
@testable import RelayCore

@Suite struct LockoutTrackerTests {
    static let policy = LockoutTracker.Policy(principalFailures: 3, sourceFailures: 5, window: 60, duration: 600)

    @Test func principalFailuresLockTheFailingSourcesButNotTheUsersOwn() {
        var tracker = LockoutTracker(policy: Self.policy)
        for i in 0..<3 { tracker.recordFailure(principal: "alice", source: "10.0.0.66", now: 100 + UInt64(i)) }
        #expect(tracker.isLocked(principal: "alice", source: "10.0.0.66", now: 110))
        #expect(!tracker.isLocked(principal: "alice", source: "10.0.0.7", now: 110), "the real user elsewhere is not locked out")
        #expect(!tracker.isLocked(principal: "bob", source: "10.0.0.66", now: 110), "below the source limit other names still try")
        #expect(!tracker.isLocked(principal: "alice", source: "10.0.0.66", now: 100 + 2 + 600), "the lock expires")
    }

    /// NTLM finds `alice` under any spelling of her name (Windows' uppercasing, so also
    /// `alıce` with a dotless i); the count must too, or each spelling would be a fresh
    /// allowance of guesses.
    /// Checks still running count against the allowance: a source never has more of them
    /// than failures left, one account from one source never more than its limit.
    @Test func runningChecksSpendTheAllowance() {
        var tracker = LockoutTracker(policy: Self.policy)
        func begin(_ principal: String, _ source: String, _ now: UInt64) -> Bool {
            tracker.beginCheck(principal: principal, source: source, now: now)
        }
        for i in 0..<3 { #expect(begin("alice", "10.0.0.66", 100), "check \(i)") }
        #expect(!begin("ALICE", "10.0.0.66", 100), "three running for alice from there")
        #expect(begin("alice", "10.0.0.7", 100), "another source has its own")
        #expect(begin("bob", "10.0.0.66", 100))
        tracker.recordFailure(principal: "carol", source: "10.0.0.66", now: 100)
        #expect(!begin("dave", "10.0.0.66", 100), "4 running + 1 failure = the source's 5")
        tracker.endCheck(principal: "bob", source: "10.0.0.66")
        #expect(begin("dave", "10.0.0.66", 100), "a finished check frees its place")
        #expect(!begin("erin", "10.0.0.66", 100))
        #expect(begin("erin", "10.0.0.66", 100 + 61), "the failure left the window")
        for name in ["alice", "alice", "alice", "dave", "erin"] { tracker.endCheck(principal: name, source: "10.0.0.66") }
        tracker.endCheck(principal: "alice", source: "10.0.0.7")
        for i in 0..<3 { #expect(begin("alice", "10.0.0.66", 200), "check \(i) after all ended") }

        // Failures already counted for a principal (from anywhere) leave it fewer checks.
        for _ in 0..<2 { tracker.recordFailure(principal: "frank", source: "10.0.0.9", now: 300) }
        #expect(begin("frank", "10.0.0.10", 300))
        #expect(!begin("frank", "10.0.0.10", 300), "two failures + one running = frank's three")
        // A locked source starts nothing.
        for _ in 0..<5 { tracker.recordFailure(principal: nil, source: "10.0.0.11", now: 300) }
        #expect(!begin("gina", "10.0.0.11", 300))
    }

    @Test func spellingsOfOneNameShareOneCount() {
        var tracker = LockoutTracker(policy: Self.policy)
        for (i, name) in ["Alice", "ALICE", "al\u{131}ce"].enumerated() {
            tracker.recordFailure(principal: name, source: "10.0.0.66", now: 100 + UInt64(i))
        }
        #expect(tracker.isLocked(principal: "aLiCe", source: "10.0.0.66", now: 110))
        #expect(NTLMUserName.comparisonKey("\u{17F}am") == NTLMUserName.comparisonKey("sam"), "a long s is an s to NTLM")
        #expect(!tracker.isLocked(principal: "alice", source: "10.0.0.7", now: 110))
        tracker.recordSuccess(principal: "ALICE", source: "10.0.0.66")
        #expect(tracker.failingPairs == 0, "a success under another spelling clears the pair")
    }

    /// The summaries callers use to skip the tracker: nothing is locked at or after
    /// `latestLockedUntil`, and with no failing pair a success has nothing to clear.
    @Test func summariesBoundWhatTheLookupsCanFind() {
        var tracker = LockoutTracker(policy: Self.policy)
        #expect(tracker.latestLockedUntil == 0)
        #expect(tracker.failingPairs == 0)
        tracker.recordFailure(principal: "alice", source: "s", now: 100)
        #expect(tracker.latestLockedUntil == 0, "one failure locks nothing")
        #expect(tracker.failingPairs == 1)
        tracker.recordFailure(principal: nil, source: "t", now: 100)
        #expect(tracker.failingPairs == 1, "a failure without a name has no pair")
        tracker.recordFailure(principal: "alice", source: "s", now: 101)
        tracker.recordFailure(principal: "alice", source: "s", now: 102)
        #expect(tracker.isLocked(principal: "alice", source: "s", now: 103))
        #expect(tracker.latestLockedUntil == 102 + 600)
        #expect(!tracker.isLocked(principal: "alice", source: "s", now: tracker.latestLockedUntil))
        tracker.recordSuccess(principal: "alice", source: "s")
        #expect(tracker.failingPairs == 0)
    }

    @Test func aSourceSprayingNamesIsLockedOutEntirely() {
        var tracker = LockoutTracker(policy: Self.policy)
        for i in 0..<5 { tracker.recordFailure(principal: "user\(i)", source: "10.0.0.66", now: 100) }
        #expect(tracker.isLocked(principal: nil, source: "10.0.0.66", now: 101))
        #expect(tracker.isLocked(principal: "fresh", source: "10.0.0.66", now: 101))
        #expect(!tracker.isLocked(principal: nil, source: "10.0.0.67", now: 101))
    }

    @Test func failuresOutsideTheWindowDoNotAddUp() {
        var tracker = LockoutTracker(policy: Self.policy)
        tracker.recordFailure(principal: "alice", source: "s", now: 100)
        tracker.recordFailure(principal: "alice", source: "s", now: 200)
        tracker.recordFailure(principal: "alice", source: "s", now: 300)
        #expect(!tracker.isLocked(principal: "alice", source: "s", now: 301))
    }

    @Test func aSuccessClearsOnlyItsOwnPair() {
        var tracker = LockoutTracker(policy: Self.policy)
        tracker.recordFailure(principal: "alice", source: "home", now: 100)
        tracker.recordSuccess(principal: "alice", source: "home")
        tracker.recordFailure(principal: "alice", source: "evil", now: 101)
        tracker.recordFailure(principal: "alice", source: "evil", now: 102)
        #expect(tracker.isLocked(principal: "alice", source: "evil", now: 103))
        #expect(!tracker.isLocked(principal: "alice", source: "home", now: 103))
    }

    @Test func aFloodOfMadeUpNamesStaysBounded() {
        var tracker = LockoutTracker(policy: .init(principalFailures: 3, sourceFailures: 1_000_000, window: 60, duration: 600),
                                     capacity: 1000)
        for i in 0..<20_000 { tracker.recordFailure(principal: "n\(i)", source: "s\(i % 50)", now: 100) }
        // Nothing to assert on memory directly; the tracker still answers and locks new abuse.
        for _ in 0..<3 { tracker.recordFailure(principal: "target", source: "x", now: 100) }
        #expect(tracker.isLocked(principal: "target", source: "x", now: 101))
    }

    /// A flood of made-up names that overfills the tables must not wipe the locks already
    /// set: that would hand a locked-out guesser a fresh allowance.
    @Test func aFloodKeepsTheLocks() {
        var tracker = LockoutTracker(policy: .init(principalFailures: 3, sourceFailures: 5, window: 60, duration: 600),
                                     capacity: 1000)
        for _ in 0..<3 { tracker.recordFailure(principal: "alice", source: "10.0.0.66", now: 100) }
        for _ in 0..<5 { tracker.recordFailure(principal: nil, source: "10.0.0.77", now: 100) }
        for i in 0..<5_000 { tracker.recordFailure(principal: "n\(i)", source: "s\(i)", now: 101) }
        #expect(tracker.isLocked(principal: "alice", source: "10.0.0.66", now: 102))
        #expect(tracker.isLocked(principal: nil, source: "10.0.0.77", now: 102))
    }
}
