import Glibc
@testable import RelayIO
import Testing

/// Counts its own release: held by a timer's closure, it tells when the closure went.
private final class ReleaseCounter: Sendable {
    private let released: Shared<Int>

    init(_ released: Shared<Int>) {
        self.released = released
    }

    deinit {
        released.update { $0 += 1 }
    }
}

extension RelayIOSuite {
    @Suite struct LoopTimerTests {
        @Test func aTimerFiresOnceOnItsLoop() {
            let loop = EventLoopGroup(count: 1).next()
            let fired = Shared<[UInt64]>([])
            let scheduled = monotonicNanos()
            let timer = loop.make {
                loop.scheduleTimer(after: .milliseconds(50)) {
                    precondition(loop.inLoop)
                    fired.update { $0.append(monotonicNanos()) }
                }
            }
            #expect(eventually { !fired.value.isEmpty })
            usleep(200_000)
            let times = fired.value
            #expect(times.count == 1)
            if let first = times.first {
                #expect(first - scheduled >= 40_000_000, "fired after \((first - scheduled) / 1_000_000) ms")
            }
            timer.sync { $0.cancel() }  // after firing: harmless
        }

        @Test func cancelPreventsFiring() {
            let loop = EventLoopGroup(count: 1).next()
            let fired = Shared(0)
            let timer = loop.make { loop.scheduleTimer(after: .milliseconds(30)) { fired.update { $0 += 1 } } }
            timer.sync { $0.cancel() }
            timer.sync { $0.cancel() }
            // A control timer proves the loop ran past the cancelled deadline.
            let control = Latch<Bool>()
            let later = loop.make { loop.scheduleTimer(after: .milliseconds(150)) { control.set(true) } }
            #expect(control.wait() == true)
            #expect(fired.value == 0)
            _ = later
        }

        @Test func droppingTheHandleCancels() {
            let loop = EventLoopGroup(count: 1).next()
            let fired = Shared(0)
            loop.sync {
                _ = loop.scheduleTimer(after: .milliseconds(30)) { fired.update { $0 += 1 } }
            }
            let control = Latch<Bool>()
            let later = loop.make { loop.scheduleTimer(after: .milliseconds(150)) { control.set(true) } }
            #expect(control.wait() == true)
            #expect(fired.value == 0)
            _ = later
        }

        @Test func aZeroDelayTimerFires() {
            let loop = EventLoopGroup(count: 1).next()
            let fired = Latch<Bool>()
            let timer = loop.make { loop.scheduleTimer(after: .zero) { fired.set(true) } }
            #expect(fired.wait() == true)
            _ = timer
        }

        @Test func cancelledTimersAreSweptOutAsTheHeapGrows() {
            // A heap of its own, on a loop: the timers' closures live on the loop.
            let loop = EventLoopGroup(count: 1).next()
            let (count, fired, live) = loop.sync {
                var heap = TimerHeap()
                var live: [LoopTimer] = []
                for index in 0..<100_000 {
                    let timer = LoopTimer(fire: {}, on: loop)
                    heap.push(.init(deadline: 1_000_000 + UInt64(index), state: timer.state))
                    if index % 1000 == 0 { live.append(timer) } else { timer.cancel() }
                }
                let count = heap.count
                var fired = 0
                while heap.popExpired(now: .max) != nil { fired += 1 }
                return (count, fired, live.count)
            }
            #expect(count < 3_000, "cancelled entries must not pile up: \(count)")
            #expect(fired == live, "every live timer still fires")
        }

        /// A handle released off its loop (inside a `LoopBound`, or by an owner freed on
        /// another thread) cancels its timer, and its closure is released by the loop soon
        /// after, not at the deadline a minute later.
        @Test func aHandleReleasedOnAnotherThreadCancelsAndFreesItsClosureAtOnce() {
            let loop = EventLoopGroup(count: 1).next()
            let count = 1_000
            let fired = Shared(0)
            let released = Shared(0)
            do {
                let handles = loop.make {
                    (0..<count).map { _ in
                        let counter = ReleaseCounter(released)
                        return loop.scheduleTimer(after: .seconds(60)) {
                            _ = counter
                            fired.update { $0 += 1 }
                        }
                    }
                }
                #expect(handles.loop === loop)
            }
            #expect(eventually { released.value == count }, "\(released.value) of \(count) closures released")
            #expect(fired.value == 0)
        }

        /// Handles released on the test thread while the loop fires their timers: whichever
        /// comes first wins, each timer fires at most once, and every closure is released
        /// exactly once. Run under `swift test --sanitize=thread` this also shows that the
        /// cancel and the firing share no unsynchronized memory.
        @Test func handlesReleasedOnAnotherThreadWhileTheLoopFiresThemFireAtMostOnce() {
            let loop = EventLoopGroup(count: 1).next()
            let rounds = 40
            let perRound = 250
            let fires = Shared([Int](repeating: 0, count: rounds * perRound))
            let released = Shared(0)
            for round in 0..<rounds {
                do {
                    let handles = loop.make {
                        (0..<perRound).map { index in
                            let counter = ReleaseCounter(released)
                            let timer = round * perRound + index
                            return loop.scheduleTimer(after: .zero) {
                                _ = counter
                                fires.update { $0[timer] += 1 }
                            }
                        }
                    }
                    // Due at once: the loop fires them as soon as the hand-off returns, while
                    // this thread releases them.
                    _ = handles
                }
            }
            let total = rounds * perRound
            #expect(eventually { released.value == total }, "\(released.value) of \(total) closures released")
            loop.sync {}
            #expect(released.value == total, "a closure was released twice")
            #expect(fires.value.allSatisfy { $0 <= 1 }, "a timer fired twice")
            print("timers released off the loop while due: \(fires.value.filter { $0 == 1 }.count) of \(total) fired first")
        }
    }
}
