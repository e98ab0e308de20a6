import Dispatch
import Glibc
@testable import RelayIO
import Testing

extension RelayIOSuite {
    @Suite struct EventLoopTests {
        @Test func nextIsRoundRobin() {
            let group = EventLoopGroup(count: 3)
            #expect((0..<7).map { _ in group.next().index } == [0, 1, 2, 0, 1, 2, 0])
            #expect(group.loops.map(\.index) == [0, 1, 2])
        }

        @Test func nextSpreadsEvenlyAcrossThreads() {
            let group = EventLoopGroup(count: 4)
            let counts = Shared([0, 0, 0, 0])
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                var local = [0, 0, 0, 0]
                for _ in 0..<1000 { local[group.next().index] += 1 }
                counts.update { total in for i in 0..<4 { total[i] += local[i] } }
            }
            #expect(counts.value == [1000, 1000, 1000, 1000])
        }

        @Test func executeRunsInOrderOnTheLoopQueue() {
            let loop = EventLoopGroup(count: 1).next()
            let order = Shared<[Int]>([])
            let done = Latch<Bool>()
            for i in 0..<100 {
                loop.execute {
                    precondition(loop.inLoop)
                    loop.preconditionInLoop()
                    order.update { $0.append(i) }
                    if i == 99 { done.set(true) }
                }
            }
            #expect(done.wait() == true)
            #expect(order.value == Array(0..<100))
        }

        /// `execute` writes the wake-up descriptor only while the loop sleeps. Ping-pong with
        /// one thread keeps tasks arriving just as the loop goes to sleep, so a loop that does
        /// not look at its tasks again after raising its flag loses one within a few
        /// iterations and, with nothing else to wake it, never runs it (this fails in 2 s).
        /// One thread, because a second one's next task would wake the loop and rescue the
        /// first's. The order inside `execute` (append, then read the flag) guards a window
        /// of nanoseconds that this test rarely hits; it is argued at `waitForEvents`.
        @Test func aTaskRacingTheLoopIntoSleepStillWakesIt() {
            let loop = EventLoopGroup(count: 1).next()
            let ran = DispatchSemaphore(value: 0)
            var stalled = 0
            for _ in 0..<20_000 {
                loop.execute { ran.signal() }
                if ran.wait(timeout: .now() + .seconds(2)) == .timedOut {
                    stalled += 1
                    break
                }
            }
            #expect(stalled == 0)
        }

        /// Work deferred with `beforeNextWait` runs on the loop once the task that deferred
        /// it is done, and work it defers in turn runs as well before the loop waits again.
        @Test func beforeNextWaitRunsAfterTheTaskAndBeforeWaiting() {
            let loop = EventLoopGroup(count: 1).next()
            let order = Shared<[String]>([])
            let done = Latch<Bool>()
            loop.execute {
                loop.beforeNextWait {
                    order.update { $0.append("deferred") }
                    loop.beforeNextWait {
                        order.update { $0.append("deferred again") }
                        done.set(loop.inLoop)
                    }
                }
                order.update { $0.append("task") }
            }
            #expect(done.wait() == true)
            #expect(order.value == ["task", "deferred", "deferred again"])
        }

        @Test func monotonicNanosNeverGoesBack() {
            var previous = monotonicNanos()
            for _ in 0..<10_000 {
                let now = monotonicNanos()
                #expect(now >= previous)
                previous = now
            }
            let before = monotonicNanos()
            usleep(10_000)
            #expect(monotonicNanos() - before >= 10_000_000)
        }
    }

    @Suite struct SocketAddressTests {
        @Test func parsesLiteralsAndPrints() throws {
            let v4 = try #require(SocketAddress(ip: "10.1.2.3", port: 8080))
            #expect(v4.family == AF_INET)
            #expect(v4.ipBytes == [10, 1, 2, 3])
            #expect(v4.description == "10.1.2.3:8080")
            let v6 = try #require(SocketAddress(ip: "2001:db8::1", port: 443))
            #expect(v6.family == AF_INET6)
            #expect(v6.ipBytes.count == 16)
            #expect(v6.description == "[2001:db8::1]:443")
            #expect(SocketAddress(ip: "localhost", port: 1) == nil)
            #expect(SocketAddress(ip: "[::1]", port: 1) == nil)
            #expect(SocketAddress(ip: "1.2.3", port: 1) == nil)
        }

        @Test func sockaddrRoundTrips() throws {
            for text in ["127.0.0.1", "0.0.0.0", "::1", "fe80::1", "255.255.255.255"] {
                let address = try #require(SocketAddress(ip: text, port: 65535))
                let back = address.withSockAddr { pointer, length in
                    SocketAddress(storage: UnsafeRawPointer(pointer))
                }
                #expect(back == address)
                #expect(back?.ipString == text)
            }
        }

        @Test func durationsKeepTheirFractionOnTheMonotonicClock() {
            #expect(Duration.milliseconds(500).monotonicNanos == 500_000_000)
            #expect(Duration.milliseconds(1500).monotonicNanos == 1_500_000_000)
            #expect(Duration.seconds(300).monotonicNanos == 300_000_000_000)
            #expect(Duration.seconds(-1).monotonicNanos == 0)
        }
    }
}
