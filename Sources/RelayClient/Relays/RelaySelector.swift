import Foundation
import RelayCore
import Synchronization

/// The relay list a client's connections share: `RelaySelection` behind a lock, so a relay
/// that failed for one tunnel is avoided by the next one too, for its back-off period.
///
/// Make one per relay list and hand it to every tunnel that should fail over together.
public final class RelaySelector: Sendable {
    private let selection: Mutex<RelaySelection>
    /// The relays in the order given.
    public let relays: [RelayEndpoint]

    /// A selector over `relays`, all healthy.
    public init(_ relays: [RelayEndpoint],
                clock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
                random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()) {
        self.relays = relays
        selection = Mutex(RelaySelection(relays: relays, clock: clock, random: random))
    }

    /// A selector over `--relay`-style entries (`URL` or `URL;priority=N`).
    public convenience init(parsing entries: [String]) throws(RelayListError) {
        self.init(try RelayList.parse(entries))
    }

    /// A selector over the `DYNRELAY_RELAYS` variable of `environment` (the process's own by default).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(RelayListError) -> RelaySelector {
        RelaySelector(try RelayList.parse(environmentValue: environment[RelayList.environmentVariable] ?? ""))
    }

    /// The relay for the next attempt, skipping `tried`; nil when all were tried.
    public func select(excluding tried: Set<RelayEndpoint> = []) -> RelayEndpoint? {
        selection.withLock { $0.select(excluding: tried) }
    }

    /// `relay` failed (unreachable, timed out, 503): it goes into back-off.
    public func recordFailure(_ relay: RelayEndpoint) {
        selection.withLock { $0.recordFailure(relay) }
    }

    /// `relay` answered: its back-off ends.
    public func recordSuccess(_ relay: RelayEndpoint) {
        selection.withLock { $0.recordSuccess(relay) }
    }

    /// When `relay`'s back-off ends, or nil when it is not in back-off.
    public func backoffEnd(of relay: RelayEndpoint) -> ContinuousClock.Instant? {
        selection.withLock { $0.backoffEnd(of: relay) }
    }
}
