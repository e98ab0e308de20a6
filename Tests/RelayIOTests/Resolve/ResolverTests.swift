import Dispatch
import Glibc
import RelayIO
import Testing

/// Counts live instances: captured by a lookup's completion, it shows how long the
/// resolver keeps that completion after running it.
final class LifeTracker: Sendable {
    let live: Shared<Int>
    init(_ live: Shared<Int>) {
        self.live = live
        live.update { $0 += 1 }
    }
    deinit { live.update { $0 -= 1 } }
}

/// A gate a lookup's completion blocks on: the way to make a lookup "slow" with no network,
/// since completions run on the resolver's own threads.
final class Gate: Sendable {
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)

    func pass() {
        entered.signal()
        _ = release.wait(timeout: .now() + .seconds(20))
    }

    func waitEntered() -> Bool { entered.wait(timeout: .now() + .seconds(10)) == .success }
}

extension RelayIOSuite {
    @Suite struct ResolverTests {
        @Test func localhostResolvesToLoopbackWithThePort() throws {
            let resolver = Resolver(threads: 2, maxWaiting: 8)
            let outcome = Latch<Result<[SocketAddress], IOError>>()
            resolver.resolve(host: "localhost", port: 8443) { outcome.set($0) }
            let addresses = try #require(outcome.wait()).get()
            #expect(!addresses.isEmpty)
            #expect(addresses.allSatisfy { $0.ipString == "127.0.0.1" || $0.ipString == "::1" }, "\(addresses)")
            #expect(addresses.allSatisfy { $0.port == 8443 })
            #expect(Set(addresses).count == addresses.count, "duplicates: \(addresses)")
        }

        @Test func anIPLiteralResolvesToItself() throws {
            let resolver = Resolver(threads: 1, maxWaiting: 1)
            let outcome = Latch<Result<[SocketAddress], IOError>>()
            resolver.resolve(host: "::1", port: 22) { outcome.set($0) }
            #expect(try #require(outcome.wait()).get() == [SocketAddress(ip: "::1", port: 22)!])
        }

        @Test func anInvalidNameFails() throws {
            let resolver = Resolver(threads: 1, maxWaiting: 1)
            let outcome = Latch<Result<[SocketAddress], IOError>>()
            resolver.resolve(host: "nonexistent.invalid", port: 80) { outcome.set($0) }
            let result = try #require(outcome.wait(.seconds(30)))
            guard case .failure(let error) = result else {
                Issue.record("nonexistent.invalid resolved: \(result)")
                return
            }
            #expect(error.errno != EAGAIN)
            #expect(error.operation.contains("nonexistent.invalid"))
        }

        /// threads=1, maxWaiting=2: with the one thread held, two lookups wait and the rest are
        /// refused at once with EAGAIN; every lookup completes exactly once.
        @Test func aFullQueueRefusesAtOnceWithEAGAIN() throws {
            let resolver = Resolver(threads: 1, maxWaiting: 2)
            let gate = Gate()
            let outcomes = Shared<[Int: Result<[SocketAddress], IOError>]>([:])
            let completions = Shared(0)
            func submit(_ id: Int, hold: Bool = false) {
                resolver.resolve(host: "127.0.0.1", port: UInt16(1000 + id)) { result in
                    completions.update { $0 += 1 }
                    outcomes.update { $0[id] = result }
                    if hold { gate.pass() }
                }
            }
            submit(0, hold: true)
            #expect(gate.waitEntered())
            submit(1)
            submit(2)
            for id in 3..<10 {
                submit(id)
                // Refused synchronously, before resolve() returns.
                #expect(outcomes.value[id] != nil, "lookup \(id) was not refused at once")
            }
            #expect(outcomes.value[1] == nil && outcomes.value[2] == nil)
            gate.release.signal()
            #expect(eventually { completions.value == 10 })
            usleep(50_000)
            #expect(completions.value == 10)
            let all = outcomes.value
            for id in 0..<3 {
                #expect((try? all[id]?.get()) == [SocketAddress(ip: "127.0.0.1", port: UInt16(1000 + id))!])
            }
            for id in 3..<10 {
                guard case .failure(let error)? = all[id] else {
                    Issue.record("lookup \(id) was admitted")
                    continue
                }
                #expect(error.errno == EAGAIN)
            }
        }

        /// Under steady load the wait queue never empties; a finished lookup's completion
        /// (and whatever it captured, e.g. a connection) must still be released.
        @Test func finishedLookupsAreReleasedWhileTheQueueStaysBusy() throws {
            let resolver = Resolver(threads: 1, maxWaiting: 2)
            let live = Shared(0)
            let gates = (0...40).map { _ in Gate() }
            func submit(_ id: Int) {
                let tracker = LifeTracker(live)
                resolver.resolve(host: "127.0.0.1", port: 80) { _ in
                    _ = tracker
                    gates[id].pass()
                }
            }
            submit(0)
            for id in 0..<40 {
                #expect(gates[id].waitEntered(), "lookup \(id) never ran")
                submit(id + 1)  // the next one waits before this one finishes: never idle
                gates[id].release.signal()
            }
            #expect(gates[40].waitEntered())
            // Lookup 40 runs; 0...39 are done. Allow the running one and one in hand-over.
            #expect(live.value <= 3, "\(live.value) finished lookups are still held by the resolver")
            gates[40].release.signal()
            #expect(eventually { live.value == 0 })
        }
    }
}
