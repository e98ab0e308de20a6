import Dispatch
import Glibc
import RelayIO
import Testing

/// One SplicePump between two loopback pairs: `peerA`/`peerB` are the blocking far ends a
/// test drives; the pump owns the nonblocking near ends.
final class PumpHarness: Sendable {
    let group = EventLoopGroup(count: 1)
    let loop: EventLoop
    let pipes: LoopBound<PipePool>
    let peerA: Int32
    let peerB: Int32
    let pump: LoopBound<SplicePump>
    let result = Latch<SpliceResult>()
    let completions = Shared(0)
    private let peerAClosed = Shared(false)
    private let peerBClosed = Shared(false)

    init(initialAtoB: [UInt8] = [], initialBtoA: [UInt8] = [], peerBReceiveBuffer: Int32? = nil,
         peerAReceiveBuffer: Int32? = nil, localASendBuffer: Int32? = nil, localBReceiveBuffer: Int32? = nil) throws {
        // As the daemon does: splice(2) into a socket its peer reset raises SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        loop = group.next()
        let a = try LoopbackPair.make(peerReceiveBuffer: peerAReceiveBuffer, localSendBuffer: localASendBuffer)
        let b = try LoopbackPair.make(peerReceiveBuffer: peerBReceiveBuffer, localReceiveBuffer: localBReceiveBuffer)
        peerA = a.peer
        peerB = b.peer
        let eventLoop = loop
        let pool = eventLoop.make { PipePool() }
        pipes = pool
        pump = eventLoop.make {
            SplicePump(a: a.local, b: b.local, loop: eventLoop, pipes: pool.value,
                       initialBytesAtoB: initialAtoB, initialBytesBtoA: initialBtoA)
        }
    }

    func start() {
        pump.sync { [result, completions] pump in
            pump.start { outcome in
                completions.update { $0 += 1 }
                result.set(outcome)
            }
        }
    }

    /// Ends the relay as its owner's idle timeout would.
    func abort() {
        pump.sync { $0.abort() }
    }

    var lentPipes: Int { pipes.sync { $0.lentPipes } }
    var openPipes: Int { pipes.sync { $0.openPipes } }

    /// B's peer closes abortively (SO_LINGER 0): its kernel sends a reset.
    func resetPeerB() {
        Peer.setLinger0(peerB)
        Glibc.close(peerB)
        peerBClosed.update { $0 = true }
    }

    /// B's peer closes in order (a FIN); data reaching it afterwards is answered with a reset.
    func closePeerB() {
        Glibc.close(peerB)
        peerBClosed.update { $0 = true }
    }

    func resetPeerA() {
        Peer.setLinger0(peerA)
        Glibc.close(peerA)
        peerAClosed.update { $0 = true }
    }

    /// Unblocks any peer thread still waiting, then releases the peers.
    func close() {
        abort()
        if !peerAClosed.value {
            _ = shutdown(peerA, Int32(SHUT_RDWR))
            Glibc.close(peerA)
        }
        if !peerBClosed.value {
            _ = shutdown(peerB, Int32(SHUT_RDWR))
            Glibc.close(peerB)
        }
    }
}

/// A SpliceResult's fields, comparable in tests (its memberwise init is internal).
struct Relayed: Equatable {
    let bytesAtoB: UInt64
    let bytesBtoA: UInt64
    let end: SpliceResult.End
}

extension SpliceResult {
    var relayed: Relayed { Relayed(bytesAtoB: bytesAtoB, bytesBtoA: bytesBtoA, end: end) }
}

/// Samples a loop-confined value on its loop every millisecond and keeps the maximum.
final class LoopSampler: Sendable {
    private let timer: LoopRepeater
    let maximum = Shared(0)
    let samples = Shared(0)

    init(loop: EventLoop, _ sample: @escaping @Sendable () -> Int) {
        timer = LoopRepeater(loop: loop, every: .milliseconds(1)) { [maximum, samples] in
            let value = sample()
            maximum.update { $0 = max($0, value) }
            samples.update { $0 += 1 }
        }
    }

    func stop() { timer.cancel() }
}

extension RelayIOSuite {
    @Suite struct SplicePumpTests {
        @Test func sixteenMebibytesEachWaySimultaneouslyArriveByteExact() throws {
            let size = 16 * 1024 * 1024
            let aToB = Pattern.bytes(size, seed: 0xA)
            let bToA = Pattern.bytes(size, seed: 0xB)
            let harness = try PumpHarness()
            defer { harness.close() }
            harness.start()
            let (peerA, peerB) = (harness.peerA, harness.peerB)

            let sendA = Worker { () -> Int32 in
                let code = Peer.sendAll(peerA, aToB)
                _ = shutdown(peerA, Int32(SHUT_WR))
                return code
            }
            let sendB = Worker { () -> Int32 in
                let code = Peer.sendAll(peerB, bToA)
                _ = shutdown(peerB, Int32(SHUT_WR))
                return code
            }
            let receiveA = Worker { Peer.receive(peerA, expected: bToA) }
            let receiveB = Worker { Peer.receive(peerB, expected: aToB) }

            let result = try #require(harness.result.wait(.seconds(60)))
            #expect(sendA.join() == 0)
            #expect(sendB.join() == 0)
            let atB = try #require(receiveB.join())
            let atA = try #require(receiveA.join())
            #expect(atB.count == size)
            #expect(atB.firstMismatch == nil)
            #expect(atB.end == .eof)
            #expect(atA.count == size)
            #expect(atA.firstMismatch == nil)
            #expect(atA.end == .eof)
            #expect(result.relayed == Relayed(bytesAtoB: UInt64(size), bytesBtoA: UInt64(size), end: .bothClosed))
            #expect(harness.lentPipes == 0)
            #expect(harness.completions.value == 1)
        }

        @Test func halfCloseKeepsTheOtherDirectionOpenUntilItEnds() throws {
            let size = 1024 * 1024
            let request = Pattern.bytes(size, seed: 1)
            let response = Pattern.bytes(size, seed: 2)
            let harness = try PumpHarness()
            defer { harness.close() }
            harness.start()
            let (peerA, peerB) = (harness.peerA, harness.peerB)
            let result = harness.result

            let sendA = Worker { () -> Int32 in
                let code = Peer.sendAll(peerA, request)
                _ = shutdown(peerA, Int32(SHUT_WR))
                return code
            }
            // B answers only after it has seen A's EOF: the tunnel must still carry B → A then.
            let serverB = Worker { () -> (Received, Bool, Int32) in
                let received = Peer.receive(peerB, expected: request)
                let stillRelaying = result.peek == nil
                let code = Peer.sendAll(peerB, response)
                _ = shutdown(peerB, Int32(SHUT_WR))
                return (received, stillRelaying, code)
            }
            let receiveA = Worker { Peer.receive(peerA, expected: response) }

            #expect(sendA.join() == 0)
            let (atB, stillRelaying, sendCode) = try #require(serverB.join())
            #expect(atB.count == size)
            #expect(atB.firstMismatch == nil)
            #expect(atB.end == .eof)
            #expect(stillRelaying, "the relay ended on A's half-close")
            #expect(sendCode == 0)
            let atA = try #require(receiveA.join())
            #expect(atA.count == size)
            #expect(atA.firstMismatch == nil)
            #expect(atA.end == .eof)
            let outcome = try #require(harness.result.wait())
            #expect(outcome.relayed == Relayed(bytesAtoB: UInt64(size), bytesBtoA: UInt64(size), end: .bothClosed))
            #expect(harness.lentPipes == 0)
        }

        /// The initial bytes are larger than a socket buffer and spliced bytes are already
        /// waiting when the pump starts, so a wrong order would show.
        @Test func initialBytesGoFirstInBothDirectionsAndAreCounted() throws {
            let initialAtoB = Pattern.bytes(3 * 1024 * 1024 + 7, seed: 11)
            let initialBtoA = Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)
            let splicedAtoB = Pattern.bytes(1024 * 1024, seed: 12)
            let splicedBtoA = Pattern.bytes(1024 * 1024 + 3, seed: 13)
            let harness = try PumpHarness(initialAtoB: initialAtoB, initialBtoA: initialBtoA)
            defer { harness.close() }
            let (peerA, peerB) = (harness.peerA, harness.peerB)

            let sendA = Worker { () -> Int32 in
                let code = Peer.sendAll(peerA, splicedAtoB)
                _ = shutdown(peerA, Int32(SHUT_WR))
                return code
            }
            let sendB = Worker { () -> Int32 in
                let code = Peer.sendAll(peerB, splicedBtoA)
                _ = shutdown(peerB, Int32(SHUT_WR))
                return code
            }
            usleep(50_000)  // let the spliced bytes sit in the pump's sockets before it starts
            harness.start()
            let receiveA = Worker { Peer.receive(peerA, expected: initialBtoA + splicedBtoA) }
            let receiveB = Worker { Peer.receive(peerB, expected: initialAtoB + splicedAtoB) }

            let result = try #require(harness.result.wait(.seconds(30)))
            #expect(sendA.join() == 0)
            #expect(sendB.join() == 0)
            let atB = try #require(receiveB.join())
            let atA = try #require(receiveA.join())
            #expect(atB.count == initialAtoB.count + splicedAtoB.count)
            #expect(atB.firstMismatch == nil)
            #expect(atA.count == initialBtoA.count + splicedBtoA.count)
            #expect(atA.firstMismatch == nil)
            #expect(result.relayed == Relayed(bytesAtoB: UInt64(initialAtoB.count + splicedAtoB.count),
                                           bytesBtoA: UInt64(initialBtoA.count + splicedBtoA.count),
                                           end: .bothClosed))
        }

        /// B's peer resets while A's peer is sending. The pump sees ECONNRESET (or EPIPE) on
        /// b, reports `.resetByB`, and closes a with SO_LINGER 0, so A's peer must see a
        /// reset (ECONNRESET), not an orderly EOF: a client must not take a broken upstream
        /// for a complete response.
        @Test func resetOfBWhileASendsIsPassedOnAsAReset() throws {
            let harness = try PumpHarness()
            defer { harness.close() }
            harness.start()
            let (peerA, peerB) = (harness.peerA, harness.peerB)

            let sendA = Worker { Peer.sendUntilError(peerA, limit: 1 << 34) }
            let got = Peer.receive(peerB, expected: nil, limit: 256 * 1024)
            #expect(got.count == 256 * 1024)
            harness.resetPeerB()
            let result = try #require(harness.result.wait())
            #expect(result.end == .resetByB)
            #expect(result.bytesAtoB >= 256 * 1024)
            // The first error A's peer sees is the reset itself; EPIPE would only follow it.
            #expect(sendA.join() == ECONNRESET)
            #expect(harness.lentPipes == 0)
        }

        /// The same with an idle A: the pump learns of the reset by reading b.
        @Test func resetOfBOnAnIdleTunnelResetsA() throws {
            let harness = try PumpHarness()
            defer { harness.close() }
            harness.start()
            let peerA = harness.peerA
            let readA = Worker { Peer.recvOnce(peerA) }
            usleep(20_000)
            harness.resetPeerB()
            let result = try #require(harness.result.wait())
            #expect(result.relayed == Relayed(bytesAtoB: 0, bytesBtoA: 0, end: .resetByB))
            #expect(readA.join() == -Int(ECONNRESET))
        }

        /// And the mirror image: A's peer resets after B has sent; B's peer sees the reset.
        @Test func resetOfAIsPassedOnToB() throws {
            let harness = try PumpHarness()
            defer { harness.close() }
            harness.start()
            let (peerA, peerB) = (harness.peerA, harness.peerB)
            #expect(Peer.sendAll(peerB, Array("hello".utf8)) == 0)
            #expect(Peer.receive(peerA, expected: Array("hello".utf8), limit: 5).firstMismatch == nil)
            let readB = Worker { Peer.recvOnce(peerB) }
            harness.resetPeerA()
            let result = try #require(harness.result.wait())
            #expect(result.relayed == Relayed(bytesAtoB: 0, bytesBtoA: 5, end: .resetByA))
            #expect(readB.join() == -Int(ECONNRESET))
        }

        @Test func abortEndsTheRelayAndResetsBothPeers() throws {
            let harness = try PumpHarness()
            defer { harness.close() }
            harness.start()
            let (peerA, peerB) = (harness.peerA, harness.peerB)
            #expect(Peer.sendAll(peerA, Array("ping".utf8)) == 0)
            #expect(Peer.receive(peerB, expected: Array("ping".utf8), limit: 4).firstMismatch == nil)
            #expect(Peer.sendAll(peerB, Array("pong!".utf8)) == 0)
            #expect(Peer.receive(peerA, expected: Array("pong!".utf8), limit: 5).firstMismatch == nil)

            harness.abort()
            let result = try #require(harness.result.wait())
            #expect(result.relayed == Relayed(bytesAtoB: 4, bytesBtoA: 5, end: .aborted))
            // The relay cut the stream: neither peer may take the end for an orderly close.
            #expect(Peer.recvOnce(peerA) == -Int(ECONNRESET))
            #expect(Peer.recvOnce(peerB) == -Int(ECONNRESET))
            #expect(harness.lentPipes == 0)
            harness.abort()
            #expect(harness.completions.value == 1)
        }

        /// B replies, closes in order and then resets the bytes A sends late, while its reply
        /// is still on its way to a slow reader A: A gets the whole reply and a FIN, not a
        /// reset that would cost it the end of the reply.
        @Test(arguments: [4, 8 << 20])
        func aResetAfterBsFinStillDeliversItsReplyToASlowReader(lateBytes: Int) throws {
            // A's side takes little; B's side of the relay takes the whole reply into its
            // receive queue, so the reply has left B before B closes.
            let harness = try PumpHarness(peerAReceiveBuffer: 32 * 1024, localASendBuffer: 32 * 1024,
                                          localBReceiveBuffer: 1 << 20)
            defer { harness.close() }
            harness.start()
            let (peerA, peerB) = (harness.peerA, harness.peerB)
            let reply = Pattern.bytes(300 * 1024, seed: 21)
            #expect(Peer.sendAll(peerB, reply) == 0)
            // The whole reply has left B (the relay holds what A has not read), then B closes.
            var queued: Int32 = 1
            for _ in 0..<500 where queued > 0 {
                _ = ioctl(peerB, UInt(TIOCOUTQ), &queued)
                if queued > 0 { usleep(10_000) }
            }
            #expect(queued == 0)
            harness.closePeerB()
            usleep(50_000)
            // A's late bytes reach the closed B, which answers with a reset: a few bytes are
            // copied, 8 MiB are spliced (the first full read switches to splice), more than
            // the sockets hold: A goes on writing before it reads, as a simple blocking client
            // does, and what it sends from then on is read and dropped, so it is not left blocked.
            for _ in 0..<3 {
                #expect(Peer.sendAll(peerA, Pattern.bytes(lateBytes, seed: 22)) == 0)
                usleep(50_000)
            }
            #expect(harness.result.peek == nil, "the relay waits for A to take the reply")
            let got = Peer.receive(peerA, expected: reply)
            #expect(got.count == reply.count)
            #expect(got.firstMismatch == nil)
            #expect(got.end == .eof, "a FIN after the whole reply, not a reset")
            let result = try #require(harness.result.wait())
            #expect(result.end == .resetByB)
            #expect(result.bytesBtoA == UInt64(reply.count))
        }

        @Test func anIdleTunnelHoldsNoPipe() throws {
            let harness = try PumpHarness()
            defer { harness.close() }
            harness.start()
            let (peerA, peerB) = (harness.peerA, harness.peerB)
            let hello = Pattern.bytes(100_000, seed: 5)
            #expect(Peer.sendAll(peerA, hello) == 0)
            #expect(Peer.receive(peerB, expected: hello, limit: hello.count).firstMismatch == nil)
            #expect(Peer.sendAll(peerB, hello) == 0)
            #expect(Peer.receive(peerA, expected: hello, limit: hello.count).firstMismatch == nil)
            usleep(100_000)
            #expect(harness.result.peek == nil)
            #expect(harness.lentPipes == 0)
            #expect(harness.openPipes >= 1, "the pipes that carried the bytes went back to the pool")

            _ = shutdown(peerA, Int32(SHUT_WR))
            _ = shutdown(peerB, Int32(SHUT_WR))
            let result = try #require(harness.result.wait())
            #expect(result.end == .bothClosed)
            #expect(harness.lentPipes == 0)
        }

        /// A request and its reply fit the copy buffer: they are copied, and no pipe is made.
        @Test func aSmallExchangeIsCopiedWithoutAPipe() throws {
            let harness = try PumpHarness()
            defer { harness.close() }
            harness.start()
            let (peerA, peerB) = (harness.peerA, harness.peerB)
            let request = Pattern.bytes(700, seed: 11)
            let reply = Pattern.bytes(3000, seed: 12)
            #expect(Peer.sendAll(peerA, request) == 0)
            #expect(Peer.receive(peerB, expected: request, limit: request.count).firstMismatch == nil)
            #expect(Peer.sendAll(peerB, reply) == 0)
            #expect(Peer.receive(peerA, expected: reply, limit: reply.count).firstMismatch == nil)
            _ = shutdown(peerA, Int32(SHUT_WR))
            _ = shutdown(peerB, Int32(SHUT_WR))
            let result = try #require(harness.result.wait())
            #expect(result.relayed == Relayed(bytesAtoB: 700, bytesBtoA: 3000, end: .bothClosed))
            #expect(harness.openPipes == 0)
        }

        /// Small writes are copied; while B's peer reads nothing, the part of a copied read B's
        /// socket refuses is kept, and everything arrives in order once B reads again.
        @Test func copiedBytesTheReceiverRefusesAreKeptAndArriveInOrder() throws {
            let chunk = 2 * 1024
            // More than the sockets on the way can buffer, so B's near end does fill up, and
            // slowly enough that the first stall comes while the direction still copies (after
            // it, A's backlog fills a read and the direction splices). Dropping the bytes kept
            // at that stall makes this test fail.
            let size = 8 * 1024 * 1024
            let payload = Pattern.bytes(size, seed: 13)
            let harness = try PumpHarness(peerBReceiveBuffer: 8 * 1024)
            defer { harness.close() }
            harness.start()
            let (peerA, peerB) = (harness.peerA, harness.peerB)
            let sendA = Worker { () -> Int32 in
                var offset = 0
                while offset < size {
                    let code = Peer.sendAll(peerA, Array(payload[offset..<min(offset + chunk, size)]))
                    guard code == 0 else { return code }
                    offset += chunk
                    usleep(20)
                }
                _ = shutdown(peerA, Int32(SHUT_WR))
                return 0
            }
            usleep(700_000)
            #expect(harness.result.peek == nil)
            let atB = Peer.receive(peerB, expected: payload)
            #expect(sendA.join() == 0)
            #expect(atB.count == size)
            #expect(atB.firstMismatch == nil)
            #expect(atB.end == .eof)
            _ = shutdown(peerB, Int32(SHUT_WR))
            let result = try #require(harness.result.wait())
            #expect(result.relayed == Relayed(bytesAtoB: UInt64(size), bytesBtoA: 0, end: .bothClosed))
            #expect(harness.lentPipes == 0)
        }

        /// B's peer has a small receive buffer and reads 16 KiB a millisecond: the pump must
        /// stop reading A rather than buffer, so at most one pipe per direction is out.
        @Test func slowReaderGetsEverythingWithAtMostOnePipePerDirection() throws {
            let size = 8 * 1024 * 1024
            let payload = Pattern.bytes(size, seed: 8)
            let harness = try PumpHarness(peerBReceiveBuffer: 64 * 1024)
            defer { harness.close() }
            let pipes = harness.pipes
            let sampler = LoopSampler(loop: harness.loop) { pipes.value.lentPipes }
            defer { sampler.stop() }
            harness.start()
            let (peerA, peerB) = (harness.peerA, harness.peerB)

            let sendA = Worker { () -> Int32 in
                let code = Peer.sendAll(peerA, payload)
                _ = shutdown(peerA, Int32(SHUT_WR))
                return code
            }
            let slowB = Worker { () -> Received in
                let received = Peer.receive(peerB, expected: payload, chunk: 16 * 1024) { usleep(1_000) }
                _ = shutdown(peerB, Int32(SHUT_WR))
                return received
            }
            let atB = try #require(slowB.join(.seconds(60)))
            #expect(sendA.join() == 0)
            #expect(atB.count == size)
            #expect(atB.firstMismatch == nil)
            #expect(atB.end == .eof)
            let result = try #require(harness.result.wait())
            #expect(result.relayed == Relayed(bytesAtoB: UInt64(size), bytesBtoA: 0, end: .bothClosed))
            sampler.stop()
            #expect(sampler.samples.value > 10)
            #expect(sampler.maximum.value >= 1, "the sampler never saw the pipe that carried 8 MiB")
            #expect(sampler.maximum.value <= 2)
            #expect(harness.lentPipes == 0)
        }

        /// Moves a bounded stream and checks that all of it arrived and was counted; prints its rate,
        /// which no test asserts on.
        @Test func singleStreamThroughput() throws {
            let harness = try PumpHarness()
            defer { harness.close() }
            harness.start()
            let (peerA, peerB) = (harness.peerA, harness.peerB)
            let limit = 1 << 30
            let started = monotonicNanos()
            let deadline = started + 2_000_000_000
            let sendA = Worker { () -> Int in
                let block = [UInt8](repeating: 0xC3, count: 1024 * 1024)
                var total = 0
                while total < limit && monotonicNanos() < deadline {
                    guard Peer.sendAll(peerA, block) == 0 else { break }
                    total += block.count
                }
                _ = shutdown(peerA, Int32(SHUT_WR))
                return total
            }
            let drainB = Worker { Peer.receive(peerB, expected: nil, chunk: 1024 * 1024) }
            let sent = try #require(sendA.join())
            let received = try #require(drainB.join())
            let seconds = Double(monotonicNanos() - started) / 1e9
            _ = shutdown(peerB, Int32(SHUT_WR))
            let result = try #require(harness.result.wait())
            print("splice throughput, one stream over loopback: \(sent >> 20) MiB in "
                  + "\(String(format: "%.2f", seconds)) s = \(Int(Double(sent) / 1_048_576 / seconds)) MiB/s")
            #expect(received.count == sent)
            #expect(result.bytesAtoB == UInt64(sent))
        }
    }
}
