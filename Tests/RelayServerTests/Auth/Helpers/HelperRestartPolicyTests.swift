@testable import RelayServer
import Testing

/// When a dead helper starts again: spaced by the minimum interval, backing off while it
/// never answers.
@Suite struct HelperRestartPolicyTests {
    @Test func restartsAreSpacedAndBackOffWhileTheHelperNeverAnswers() {
        let second: UInt64 = 1_000_000_000
        var policy = HelperRestartPolicy(minimumInterval: .seconds(1), maximumInterval: .seconds(8))
        policy.started(now: 0)
        #expect(policy.died(answeredAnything: true, now: 10 * second) == 0)
        #expect(!policy.isFailing)
        policy.started(now: 10 * second)
        #expect(policy.died(answeredAnything: true, now: 10 * second + 1) == second - 1)
        var now = 20 * second
        var waits: [UInt64] = []
        for _ in 0..<6 {
            policy.started(now: now)
            let wait = policy.died(answeredAnything: false, now: now)
            waits.append(wait / second)
            now += wait
        }
        #expect(waits == [1, 2, 4, 8, 8, 8])
        #expect(policy.isFailing)
        policy.answered()
        #expect(!policy.isFailing)
    }
}
