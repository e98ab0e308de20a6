import Synchronization
import Testing
@testable import RelayCore

/// A monotonic clock the test moves by hand.
final class ManualInstantClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)

    var now: ContinuousClock.Instant { instant.withLock { $0 } }

    func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
}

/// Returns the values it was given, in order, then repeats the last: the selection takes
/// `next() % group size`, so each value names the index picked within a priority group.
struct ScriptedRandom: RandomNumberGenerator, Sendable {
    var values: [UInt64]
    var index = 0

    mutating func next() -> UInt64 {
        defer { index += 1 }
        return values[min(index, values.count - 1)]
    }
}

@Suite("Relay selection")
struct RelaySelectionTests {
    static let relays = try! RelayList.parse([
        "http://a1.example:3128;priority=1", "http://a2.example:3128;priority=1", "http://a3.example:3128;priority=1",
        "http://b1.example:3128;priority=2", "http://b2.example:3128;priority=2",
        "http://c1.example:3128;priority=3",
    ])

    static func names(_ relays: [RelayEndpoint]) -> [String] { relays.map { $0.url.cookieHost.prefix(2).description } }

    static func selection(_ clock: ManualInstantClock, _ random: [UInt64]) -> RelaySelection {
        RelaySelection(relays: relays, clock: { clock.now }, random: ScriptedRandom(values: random))
    }

    /// One request failing over through every relay: random within the top priority, then down.
    static func failOverEverything(_ selection: inout RelaySelection) -> [RelayEndpoint] {
        var tried: [RelayEndpoint] = []
        while let relay = selection.select(excluding: Set(tried)), tried.count < 10 {
            tried.append(relay)
            selection.recordFailure(relay)
        }
        return tried
    }

    @Test func randomWithinAPriorityThenTheNext() {
        let clock = ManualInstantClock()
        // a group of 3 takes index 1 (a2), then of {a1, a3} index 1 (a3), then a1; b: {b1,b2} index 0; c1.
        var selection = Self.selection(clock, [4, 1, 0, 2, 0, 0])
        #expect(Self.names(Self.failOverEverything(&selection)) == ["a2", "a3", "a1", "b1", "b2", "c1"])
    }

    @Test func aFailedRelayIsAvoidedForItsBackoff() {
        let clock = ManualInstantClock()
        var selection = Self.selection(clock, [0])
        let a1 = Self.relays[0]
        #expect(selection.select() == a1)
        selection.recordFailure(a1)
        #expect(selection.select() == Self.relays[1])
        #expect(selection.backoffEnd(of: a1) == clock.now + .seconds(1))
        clock.advance(.milliseconds(999))
        #expect(selection.select() == Self.relays[1])
        clock.advance(.milliseconds(1))
        #expect(selection.select() == a1)
        #expect(selection.backoffEnd(of: a1) == nil)
    }

    @Test func backoffDoublesToAMinuteAndSuccessResetsIt() {
        #expect((1...9).map { RelaySelection.backoff(afterFailures: $0) } == [1, 2, 4, 8, 16, 32, 60, 60, 60].map { Duration.seconds($0) })
        #expect(RelaySelection.backoff(afterFailures: 1000) == .seconds(60))
        let clock = ManualInstantClock()
        var selection = Self.selection(clock, [0])
        let a1 = Self.relays[0]
        for _ in 0..<3 { selection.recordFailure(a1) }
        #expect(selection.backoffEnd(of: a1) == clock.now + .seconds(4))
        selection.recordSuccess(a1)
        #expect(selection.backoffEnd(of: a1) == nil)
        selection.recordFailure(a1)
        #expect(selection.backoffEnd(of: a1) == clock.now + .seconds(1))
    }

    @Test func whenEveryRelayIsInBackoffTheOneEndingFirstIsUsed() {
        let clock = ManualInstantClock()
        var selection = Self.selection(clock, [0])
        // c1 fails once (1 s), everything else twice (2 s), a2 first so its back-off ends
        // first among those.
        for relay in Self.relays where relay != Self.relays[5] {
            selection.recordFailure(relay)
        }
        clock.advance(.milliseconds(100))
        for relay in [Self.relays[1], Self.relays[0], Self.relays[2], Self.relays[3], Self.relays[4]] {
            selection.recordFailure(relay)
            clock.advance(.milliseconds(1))
        }
        selection.recordFailure(Self.relays[5])
        #expect(Self.names([selection.select()!]) == ["c1"])
        #expect(Self.names([selection.select(excluding: [Self.relays[5]])!]) == ["a2"])
        // Equal ends: the higher priority, then the order given.
        var tied = Self.selection(clock, [0])
        for relay in Self.relays.reversed() { tied.recordFailure(relay) }
        #expect(Self.names([tied.select()!]) == ["a1"])
        #expect(Self.names([tied.select(excluding: [Self.relays[0], Self.relays[1], Self.relays[2]])!]) == ["b1"])
    }

    @Test func aRequestNeverGetsARelayTwice() {
        let clock = ManualInstantClock()
        var selection = Self.selection(clock, [7, 3, 5, 1, 2, 9, 4])
        let tried = Self.failOverEverything(&selection)
        #expect(tried.count == Self.relays.count)
        #expect(Set(tried).count == Self.relays.count)
        #expect(Self.names(tried).map { String($0.prefix(1)) } == ["a", "a", "a", "b", "b", "c"])
        #expect(selection.select(excluding: Set(Self.relays)) == nil)
    }

    @Test func theNextRequestPrefersTheHealthyRelays() {
        let clock = ManualInstantClock()
        var selection = Self.selection(clock, [0])
        selection.recordFailure(Self.relays[0])
        selection.recordFailure(Self.relays[1])
        #expect(Self.names([selection.select()!]) == ["a3"])
        selection.recordFailure(Self.relays[2])
        #expect(Self.names([selection.select()!]) == ["b1"])
        clock.advance(.seconds(1))
        #expect(Self.names([selection.select()!]) == ["a1"])
    }
}
