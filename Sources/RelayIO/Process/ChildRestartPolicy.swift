/// When to start a child program again after it died.
///
/// Never sooner than `minimumInterval` after the previous start, so a program that crashes
/// on every request cannot turn the daemon into a fork loop. A child that died without ever
/// answering (a bad path, a missing password file, `/bin/false`) doubles the wait each time,
/// up to `maximumInterval`, and marks the program *failing*: its owner then fails requests
/// at once instead of letting them wait out their timeout behind a child that will not come up.
struct ChildRestartPolicy {
    let minimumInterval: UInt64
    let maximumInterval: UInt64
    private var lastStart: UInt64?
    /// Children in a row that died (or failed to start) before answering anything.
    private(set) var silentDeaths = 0

    init(minimumInterval: Duration, maximumInterval: Duration = .seconds(30)) {
        self.minimumInterval = minimumInterval.monotonicNanos
        self.maximumInterval = max(maximumInterval.monotonicNanos, self.minimumInterval)
    }

    var isFailing: Bool { silentDeaths > 0 }

    mutating func started(now: UInt64) {
        lastStart = now
    }

    /// The child answered a request: it works, whatever it said.
    mutating func answered() {
        silentDeaths = 0
    }

    /// Nanoseconds to wait from `now` before the next start.
    mutating func died(answeredAnything: Bool, now: UInt64) -> UInt64 {
        silentDeaths = answeredAnything ? 0 : silentDeaths + 1
        var interval = minimumInterval
        if silentDeaths > 1 {
            let doublings = min(silentDeaths - 1, 16)
            interval = min(minimumInterval << UInt64(doublings), maximumInterval)
        }
        guard let lastStart else { return interval }
        let earliest = lastStart + interval
        return earliest > now ? earliest - now : 0
    }
}
