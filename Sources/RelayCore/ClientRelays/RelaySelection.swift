/// Which relay the next attempt uses, the way `getApplicationConfig` users expect: a random
/// relay of the highest priority not in back-off, another of that priority when it fails,
/// then the next priority. A relay that failed is avoided for a back-off period that
/// doubles with each consecutive failure (1 s up to 60 s) and ends at its next success.
/// When every relay still to try is in back-off, the one whose back-off ends first is used,
/// so a client with only failing relays keeps trying rather than giving up.
///
/// A value type without locks: the client owns one and serialises access. The clock and the
/// random source are injected so tests can state the exact order.
public struct RelaySelection: Sendable {
    /// The back-off after the first failure.
    public static let initialBackoff: Duration = .seconds(1)
    /// The longest back-off, however many failures came before.
    public static let maximumBackoff: Duration = .seconds(60)

    private struct Health: Sendable {
        var consecutiveFailures = 0
        var backoffUntil: ContinuousClock.Instant?
    }

    /// The relays in the order given.
    public let relays: [RelayEndpoint]
    private var health: [Health]
    private let clock: @Sendable () -> ContinuousClock.Instant
    private var random: any RandomNumberGenerator & Sendable

    /// A selection over `relays`, all healthy.
    public init(relays: [RelayEndpoint],
                clock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
                random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()) {
        self.relays = relays
        self.health = Array(repeating: Health(), count: relays.count)
        self.clock = clock
        self.random = random
    }

    /// The relay for the next attempt, skipping those this request has tried already; nil
    /// when every relay has been tried.
    public mutating func select(excluding tried: Set<RelayEndpoint> = []) -> RelayEndpoint? {
        let now = clock()
        let candidates = relays.indices.filter { !tried.contains(relays[$0]) }
        let available = candidates.filter { health[$0].backoffUntil.map { $0 <= now } ?? true }
        if let best = available.map({ relays[$0].priority }).min() {
            let group = available.filter { relays[$0].priority == best }
            // Modulo bias over a handful of relays is below 2^-58: not worth a rejection loop,
            // and a plain modulo lets tests script the choice exactly.
            return relays[group[Int(random.next() % UInt64(group.count))]]
        }
        let soonest = candidates.min { a, b in
            let endA = health[a].backoffUntil!, endB = health[b].backoffUntil!
            if endA != endB { return endA < endB }
            return relays[a].priority != relays[b].priority ? relays[a].priority < relays[b].priority : a < b
        }
        return soonest.map { relays[$0] }
    }

    /// Records that `relay` failed (refused, timed out, answered 503): it is avoided for its
    /// back-off period from now.
    public mutating func recordFailure(_ relay: RelayEndpoint) {
        guard let index = relays.firstIndex(of: relay) else { return }
        health[index].consecutiveFailures += 1
        health[index].backoffUntil = clock() + Self.backoff(afterFailures: health[index].consecutiveFailures)
    }

    /// Records that `relay` worked: its back-off ends and its failure count restarts.
    public mutating func recordSuccess(_ relay: RelayEndpoint) {
        guard let index = relays.firstIndex(of: relay) else { return }
        health[index] = Health()
    }

    /// When `relay`'s back-off ends, or nil when it is not in back-off.
    public func backoffEnd(of relay: RelayEndpoint) -> ContinuousClock.Instant? {
        guard let index = relays.firstIndex(of: relay), let end = health[index].backoffUntil, end > clock() else { return nil }
        return end
    }

    /// 1 s, 2 s, 4 s, ... up to `maximumBackoff`.
    public static func backoff(afterFailures failures: Int) -> Duration {
        guard failures > 0 else { return .zero }
        // Past 2^6 s the cap applies; stopping the doubling there keeps the shift in range.
        let doublings = min(failures - 1, 6)
        return min(initialBackoff * (1 << doublings), maximumBackoff)
    }
}
