/// Counts authentication failures and says who is locked out (a pure value; the server
/// keeps one behind a lock and supplies the time).
///
/// Two limits, each over a sliding `window`:
/// - a **source address** with `sourceFailures` failures, whatever names it tried, is
///   locked out entirely (a guesser spraying many accounts);
/// - a **principal** with `principalFailures` failures is locked against the sources that
///   failed for it (a guesser working on one account, even from several addresses).
///
/// A source is whatever key the caller counts clients under (dynrelay: an IPv4 address or
/// an IPv6 /64, so clients behind one NAT or on one LAN segment share it). A source that
/// never failed for a principal is not locked by that principal's count, so an attacker
/// elsewhere cannot lock the real user out, and a success costs one lookup: the
/// user's own logins do not pay for others' failures. A success clears its own pair only.
///
/// Principals are counted under NTLM's comparison key (`NTLMUserName.comparisonKey`, Windows'
/// uppercasing): NTLM finds one account under `Alice`, `ALICE`, `alıce` or `ALİCE`, and
/// counting those apart would give a guesser one allowance per spelling. For schemes with
/// exact names the cost is that two names NTLM would confuse share one count.
public struct LockoutTracker: Sendable {
    /// Limits and times, in seconds.
    public struct Policy: Sendable, Equatable {
        public var principalFailures: Int
        public var sourceFailures: Int
        public var window: UInt64
        public var duration: UInt64
        public init(principalFailures: Int, sourceFailures: Int, window: UInt64, duration: UInt64) {
            self.principalFailures = principalFailures
            self.sourceFailures = sourceFailures
            self.window = window
            self.duration = duration
        }
    }

    private struct Counter {
        var failures: [UInt64] = []
        var lockedUntil: UInt64 = 0

        mutating func prune(now: UInt64, window: UInt64) {
            let cutoff = now >= window ? now - window : 0
            failures.removeAll { $0 < cutoff }
        }
    }

    private struct Pair: Hashable {
        var principal: String
        var source: String
    }

    public let policy: Policy
    /// Most keys remembered per table; beyond it the stalest are dropped, so a flood of
    /// made-up names cannot grow memory without bound.
    public let capacity: Int
    private var sources: [String: Counter] = [:]
    private var principals: [String: Counter] = [:]
    private var pairs: [Pair: Int] = [:]
    /// The latest `lockedUntil` ever set: nothing is locked at or after it, which lets a
    /// caller skip the lookups (and its lock) while nobody is locked out.
    public private(set) var latestLockedUntil: UInt64 = 0
    /// Principal/source pairs with failures a success would clear; zero lets a caller skip
    /// `recordSuccess` altogether.
    public var failingPairs: Int { pairs.count }
    /// Slow checks running now (see `beginCheck`), per source and per principal/source pair.
    private var sourcesChecking: [String: Int] = [:]
    private var pairsChecking: [Pair: Int] = [:]

    public init(policy: Policy, capacity: Int = 100_000) {
        self.policy = policy
        self.capacity = capacity
    }

    /// Whether `source` (and, when named, `principal` from it) may try now.
    public func isLocked(principal: String?, source: String, now: UInt64) -> Bool {
        if let counter = sources[source], counter.lockedUntil > now { return true }
        guard let principal = principal.map(Self.fold), let counter = principals[principal],
              counter.lockedUntil > now else { return false }
        return (pairs[Pair(principal: principal, source: source)] ?? 0) > 0
    }

    /// Records a failed attempt; returns true when it (newly or still) locks the source or
    /// the principal for that source.
    @discardableResult
    public mutating func recordFailure(principal: String?, source: String, now: UInt64) -> Bool {
        var locked = Self.bump(&sources, key: source, limit: policy.sourceFailures, now: now, policy: policy,
                               capacity: capacity)
        if let principal = principal.map(Self.fold) {
            pairs[Pair(principal: principal, source: source), default: 0] += 1
            locked = Self.bump(&principals, key: principal, limit: policy.principalFailures, now: now, policy: policy,
                               capacity: capacity) || locked
            if pairs.count > capacity {
                // A pair is what applies a principal's lock to a source: keep those of locks.
                pairs = pairs.filter { (principals[$0.key.principal]?.lockedUntil ?? 0) > now }
                if pairs.count > capacity { pairs.removeAll(keepingCapacity: true) }
            }
        }
        if locked { latestLockedUntil = max(latestLockedUntil, now + policy.duration) }
        return locked
    }

    /// Whether a slow check (a password KDF, a helper's answer) of `principal`'s credentials
    /// from `source` may start now; when true the caller must call `endCheck` once it is
    /// over. A lockout counts failures only as checks finish, so without this a burst of
    /// guesses sent before the first one failed would all be checked: thousands per lockout
    /// instead of `sourceFailures`. A source may have as many checks running as it has
    /// failures left, and as many for one principal as that principal has failures left
    /// (counted per source: another source has its own, as it has its own lock).
    /// (A user's own connections with the same credentials share one check, so this never
    /// holds a user back who is not also being guessed at.)
    public mutating func beginCheck(principal: String, source: String, now: UInt64) -> Bool {
        if isLocked(principal: principal, source: source, now: now) { return false }
        let key = Self.fold(principal)
        let pair = Pair(principal: key, source: source)
        let cutoff = now >= policy.window ? now - policy.window : 0
        let sourceFailures = sources[source]?.failures.count(where: { $0 >= cutoff }) ?? 0
        let principalFailures = principals[key]?.failures.count(where: { $0 >= cutoff }) ?? 0
        guard sourceFailures + sourcesChecking[source, default: 0] < policy.sourceFailures,
              principalFailures + pairsChecking[pair, default: 0] < policy.principalFailures
        else { return false }
        sourcesChecking[source, default: 0] += 1
        pairsChecking[pair, default: 0] += 1
        return true
    }

    /// Ends a check `beginCheck` allowed. Call it just before recording the check's outcome:
    /// for those few instructions the check counts neither as running nor as failed, which
    /// may let one more guess start; the other order counted it twice for a moment, and a
    /// client retrying promptly after a wrong password got a spurious 429.
    public mutating func endCheck(principal: String, source: String) {
        let pair = Pair(principal: Self.fold(principal), source: source)
        if let count = sourcesChecking[source] { sourcesChecking[source] = count > 1 ? count - 1 : nil }
        if let count = pairsChecking[pair] { pairsChecking[pair] = count > 1 ? count - 1 : nil }
    }

    /// A success clears this source's failures for this principal (not the source's count
    /// for other names, nor other sources' failures).
    public mutating func recordSuccess(principal: String, source: String) {
        pairs.removeValue(forKey: Pair(principal: Self.fold(principal), source: source))
    }

    /// The key a principal is counted under (see the type's note on case).
    private static func fold(_ principal: String) -> String {
        NTLMUserName.comparisonKey(principal)
    }

    private static func bump(_ table: inout [String: Counter], key: String, limit: Int, now: UInt64, policy: Policy,
                             capacity: Int) -> Bool {
        var counter = table[key] ?? Counter()
        counter.prune(now: now, window: policy.window)
        counter.failures.append(now)
        if counter.failures.count >= limit {
            counter.lockedUntil = now + policy.duration
            counter.failures.removeAll()
        }
        let locked = counter.lockedUntil > now
        table[key] = counter
        if table.count > capacity { evictStale(&table, now: now, policy: policy, capacity: capacity) }
        return locked
    }

    /// Drops what no longer counts. If a flood of fresh names still fills most of the table,
    /// drops the counts that locked nothing too, keeping the locks (what protects accounts),
    /// and if even those fill half of it, keeps the longest-running half. Each pass leaves
    /// room for at least a quarter of `capacity` new entries, so a flood pays for the
    /// filtering once per that many failures, not once per failure.
    private static func evictStale(_ table: inout [String: Counter], now: UInt64, policy: Policy, capacity: Int) {
        let cutoff = now >= policy.window ? now - policy.window : 0
        table = table.filter { $0.value.lockedUntil > now || ($0.value.failures.last ?? 0) >= cutoff }
        guard table.count > capacity * 3 / 4 else { return }
        table = table.filter { $0.value.lockedUntil > now }
        guard table.count > capacity / 2 else { return }
        table = Dictionary(uniqueKeysWithValues: table.sorted { $0.value.lockedUntil > $1.value.lockedUntil }.prefix(capacity / 2)
            .map { ($0.key, $0.value) })
    }
}
