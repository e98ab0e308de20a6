import Glibc
@testable import RelayIO
import Testing

extension RelayIOSuite {
    /// A registration that wants neither read nor write but set `onFailure`: it stays in
    /// epoll with an empty mask, hears a reset once, and never makes the loop spin on a
    /// level-triggered error or hang-up it does not act on.
    @Suite struct FailureWatchTests {
        /// Registers `fd` on `loop` wanting nothing, with `onFailure` counting into `calls`
        /// and answering `handled` (deregistering first when it does).
        static func watch(_ fd: Int32, on loop: EventLoop, calls: Shared<Int>, handled: Bool) {
            let ready = Latch<Bool>()
            loop.execute {
                let registration = loop.register(fd)
                registration.onFailure = { [unowned registration] in
                    calls.update { $0 += 1 }
                    if handled { registration.deregister() }
                    return handled
                }
                registration.setInterest(read: true, write: false)
                registration.setInterest(read: false, write: false)
                ready.set(true)
            }
            _ = ready.wait()
        }

        /// Runs a few dozen loop passes (each task wakes the loop from epoll_wait); returns
        /// how many socket events the loop handed out meanwhile.
        @discardableResult
        static func spinTheLoop(_ loop: EventLoop) -> Int {
            let start = Shared(0)
            let end = Shared(0)
            let first = Latch<Bool>()
            loop.execute {
                start.update { $0 = loop.socketEventsDispatched }
                first.set(true)
            }
            _ = first.wait()
            for _ in 0..<50 {
                let pass = Latch<Bool>()
                loop.execute { pass.set(true) }
                _ = pass.wait()
                usleep(1_000)
            }
            let last = Latch<Bool>()
            loop.execute {
                end.update { $0 = loop.socketEventsDispatched }
                last.set(true)
            }
            _ = last.wait()
            return end.value - start.value
        }

        @Test func aResetReachesOnFailureOnceAndADeclinedOneDoesNotRepeat() throws {
            let loop = EventLoopGroup(count: 1).next()
            let pair = try LoopbackPair.make()
            defer { close(pair.local) }
            let calls = Shared(0)
            Self.watch(pair.local, on: loop, calls: calls, handled: false)
            Peer.setLinger0(pair.peer)
            close(pair.peer)
            #expect(eventually { calls.value >= 1 }, "the reset was not reported")
            #expect(Self.spinTheLoop(loop) == 0, "a declined failure left the entry in epoll")
            #expect(calls.value == 1)
        }

        @Test func aHandledResetEndsTheWatch() throws {
            let loop = EventLoopGroup(count: 1).next()
            let pair = try LoopbackPair.make()
            defer { close(pair.local) }
            let calls = Shared(0)
            Self.watch(pair.local, on: loop, calls: calls, handled: true)
            Peer.setLinger0(pair.peer)
            close(pair.peer)
            #expect(eventually { calls.value >= 1 })
            Self.spinTheLoop(loop)
            #expect(calls.value == 1)
        }

        /// Both directions shut in order: a hang-up with no error is not a failure, and the
        /// entry leaves epoll instead of being reported on every wait.
        @Test func anOrderlyHangUpIsNotAFailure() throws {
            let loop = EventLoopGroup(count: 1).next()
            let pair = try LoopbackPair.make()
            defer { close(pair.local) }
            let calls = Shared(0)
            Self.watch(pair.local, on: loop, calls: calls, handled: false)
            shutdown(pair.local, Int32(SHUT_WR))
            close(pair.peer)
            usleep(20_000)
            #expect(Self.spinTheLoop(loop) == 0, "the hang-up is reported on every wait")
            #expect(calls.value == 0)
        }
    }
}
