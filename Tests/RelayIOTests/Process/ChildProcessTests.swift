import Glibc
@testable import RelayIO
import Testing

extension RelayIOSuite {
    /// A child program on an event loop: bytes both ways, its death reported and followed by
    /// a restart, and no zombie or stray process left once it is closed.
    @Suite struct ChildProcessTests {
        /// What the owner saw, in order.
        enum Event: Sendable, Equatable {
            case started
            case output([UInt8])
            case ended(reason: String, exit: ChildExit)
            case cannotStart
        }

        /// A child of `command` on its own loop, reporting to `events`.
        static func watch(_ command: ChildCommand, restartAfter interval: Duration = .seconds(30))
            -> (loop: EventLoop, child: LoopBound<ChildProcess>, events: Shared<[Event]>) {
            let loop = EventLoopGroup(count: 1).loops[0]
            let events = Shared<[Event]>([])
            let child = loop.make {
                let child = ChildProcess(command: command, loop: loop, minimumRestartInterval: interval)
                child.onStart = { _ in events.update { $0.append(.started) } }
                child.onOutput = { chunk in let bytes = Array(chunk); events.update { $0.append(.output(bytes)) } }
                child.onEnd = { ending in
                    switch ending {
                    case .cannotStart: events.update { $0.append(.cannotStart) }
                    case .ended(_, let reason, let exit): events.update { $0.append(.ended(reason: reason, exit: exit)) }
                    }
                }
                child.start()
                return child
            }
            return (loop, child, events)
        }

        static func isGone(_ pid: pid_t) -> Bool {
            kill(pid, 0) != 0 && errno == ESRCH
        }

        @Test func bytesGoBothWaysAndCloseKillsAndReapsTheChild() throws {
            let (loop, child, events) = Self.watch(ChildCommand(executable: "/bin/cat"))
            let pid = try #require(loop.sync { child.value.pid })
            #expect(loop.sync { child.value.send(Array("one line\n".utf8)) })
            #expect(eventually { events.value.contains(.output(Array("one line\n".utf8))) })
            loop.sync { child.value.close() }
            #expect(Self.isGone(pid), "closed means killed and reaped: no zombie left")
            #expect(loop.sync { !child.value.isRunning && !child.value.send([1]) })
            #expect(events.value.first == .started)
            #expect(!events.value.contains { if case .ended = $0 { true } else { false } },
                    "close() ends the child without reporting it")
        }

        @Test func aChildThatExitsIsReportedAndStartedAgain() throws {
            let (loop, child, events) = Self.watch(ChildCommand(executable: "/bin/sh", arguments: ["-c", "echo bye; exit 3"]),
                                                   restartAfter: .milliseconds(50))
            #expect(eventually { loop.sync { child.value.generation } >= 2 })
            loop.sync { child.value.close() }
            let seen = events.value
            let firstEnd = try #require(seen.firstIndex { if case .ended = $0 { true } else { false } })
            #expect(seen[..<firstEnd] == [.started, .output(Array("bye\n".utf8))], "output written before exiting comes first")
            guard case .ended(let reason, let exit) = seen[firstEnd] else { return }
            #expect(["exited", "closed its output"].contains(reason))
            #expect(exit == .exited(status: 3))
        }

        @Test func theOwnerEndsAChildItFoundUseless() throws {
            let (loop, child, events) = Self.watch(ChildCommand(executable: "/bin/sleep", arguments: ["60"]))
            let pid = try #require(loop.sync { child.value.pid })
            loop.sync { child.value.end(reason: "stopped answering") }
            #expect(Self.isGone(pid))
            #expect(events.value == [.started, .ended(reason: "stopped answering", exit: .killed(signal: SIGKILL))])
            #expect(loop.sync { !child.value.isRunning && child.value.isFailing }, "it never answered: failing until a child does")
            loop.sync { child.value.close() }
        }

        @Test func aProgramThatCannotStartIsReportedAndFails() {
            let (loop, child, events) = Self.watch(ChildCommand(executable: "/nonexistent/program"))
            #expect(events.value == [.cannotStart])
            #expect(loop.sync { child.value.isFailing && child.value.generation == 1 })
            loop.sync { child.value.close() }
        }
    }
}
