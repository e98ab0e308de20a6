import Glibc
import RelayIO
import Testing

/// One read the gate was asked about: the side and its bytes (nil: end of stream).
struct JudgedRead: Equatable, Sendable {
    let side: SpliceGate.Side
    let bytes: [UInt8]?
}

/// A `SpliceHandOver`'s contents, comparable in tests.
struct HandedOver: Equatable, Sendable {
    let a: Int32
    let b: Int32
    let readFromA: [UInt8]
    let readFromB: [UInt8]
    let owedToA: [UInt8]
    let owedToB: [UInt8]
}

extension PumpHarness {
    /// Starts the pump behind a gate that answers `verdict` and records what it judged and
    /// what was handed over. With `relayAgain`, the hand-over starts a new pump on the
    /// sockets at once, as an owner taking over does (sending what the first pump read and
    /// owed first), in the same loop pass: it finds the epoll entries left for it.
    func startGated(judged: Shared<[JudgedRead]>, handedOver: Latch<HandedOver>,
                    relayAgain: Latch<SpliceResult>? = nil,
                    verdict: @escaping @Sendable (JudgedRead) -> SpliceGate.Verdict) {
        pump.sync { [result, completions, pipes] pump in
            let gate = SpliceGate(judge: { side, read in
                let seen: JudgedRead
                switch read {
                case .bytes(let bytes): seen = JudgedRead(side: side, bytes: Array(bytes))
                case .endOfStream: seen = JudgedRead(side: side, bytes: nil)
                }
                judged.update { $0.append(seen) }
                return verdict(seen)
            }, handedOver: { handOver in
                if let relayAgain {
                    var next: SplicePump? = SplicePump(a: handOver.a, b: handOver.b, loop: pipes.loop, pipes: pipes.value,
                                                       initialBytesAtoB: handOver.owedToB + handOver.readFromA,
                                                       initialBytesBtoA: handOver.owedToA + handOver.readFromB)
                    // Its completion holds it (its handlers do not) until it ends.
                    next?.start { outcome in
                        relayAgain.set(outcome)
                        next = nil
                    }
                }
                handedOver.set(HandedOver(a: handOver.a, b: handOver.b, readFromA: handOver.readFromA,
                                          readFromB: handOver.readFromB, owedToA: handOver.owedToA,
                                          owedToB: handOver.owedToB))
            })
            pump.start(gate: gate) { outcome in
                completions.update { $0 += 1 }
                result.set(outcome)
            }
        }
    }
}

extension RelayIOSuite {
    @Suite struct SpliceGateTests {
        static let established = Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)

        /// No bytes for `fd` within a short wait (a peer socket with its 20 s timeouts).
        static func nothingArrives(_ fd: Int32) -> Bool {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            return poll(&ready, 1, 200) == 0
        }

        @Test(arguments: [SpliceGate.Side.a, .b])
        func aRelayVerdictSendsTheJudgedBytesOnAndAsksNoMore(firstSpeaker: SpliceGate.Side) throws {
            let harness = try PumpHarness(initialBtoA: Self.established)
            defer { harness.close() }
            let judged = Shared<[JudgedRead]>([])
            let handedOver = Latch<HandedOver>()
            harness.startGated(judged: judged, handedOver: handedOver) { _ in .relay }
            let (peerA, peerB) = (harness.peerA, harness.peerB)
            #expect(Peer.receive(peerA, expected: Self.established, limit: Self.established.count).firstMismatch == nil)

            let first = Array("SSH-2.0-client\r\n".utf8)
            let reply = Array("SSH-2.0-server\r\n".utf8)
            let (speaker, listener) = firstSpeaker == .a ? (peerA, peerB) : (peerB, peerA)
            #expect(Peer.sendAll(speaker, first) == 0)
            #expect(Peer.receive(listener, expected: first, limit: first.count).firstMismatch == nil)
            #expect(Peer.sendAll(listener, reply) == 0)
            #expect(Peer.receive(speaker, expected: reply, limit: reply.count).firstMismatch == nil)
            _ = shutdown(peerA, Int32(SHUT_WR))
            _ = shutdown(peerB, Int32(SHUT_WR))

            let result = try #require(harness.result.wait())
            #expect(judged.value == [JudgedRead(side: firstSpeaker, bytes: first)], "only the first read is judged")
            #expect(handedOver.peek == nil)
            let (toB, toA) = firstSpeaker == .a ? (first, reply) : (reply, first)
            #expect(result.relayed == Relayed(bytesAtoB: UInt64(toB.count), bytesBtoA: UInt64(Self.established.count + toA.count),
                                              end: .bothClosed))
        }

        @Test func aHandOverSendsNothingOfTheReadAndTheSocketsRelayAgain() throws {
            let harness = try PumpHarness(initialBtoA: Self.established)
            defer { harness.close() }
            let judged = Shared<[JudgedRead]>([])
            let handedOver = Latch<HandedOver>()
            let second = Latch<SpliceResult>()
            harness.startGated(judged: judged, handedOver: handedOver, relayAgain: second) { _ in .handOver }
            let (peerA, peerB) = (harness.peerA, harness.peerB)
            #expect(Peer.receive(peerA, expected: Self.established, limit: Self.established.count).firstMismatch == nil)

            let hello: [UInt8] = [0x16, 0x03, 0x01]
            #expect(Peer.sendAll(peerA, hello) == 0)
            let handOver = try #require(handedOver.wait())
            #expect(handOver.readFromA == hello && handOver.readFromB.isEmpty)
            #expect(handOver.owedToA.isEmpty && handOver.owedToB.isEmpty)
            #expect(harness.result.peek == nil && harness.completions.value == 0, "a hand-over is no end of the relay")

            // The new pump sends the judged read first, then what follows, and hears B: had
            // the first pump sent the read too, B would see it twice.
            let later = Array("more".utf8)
            let reply = Array("answer".utf8)
            #expect(Peer.sendAll(peerB, reply) == 0)
            #expect(Peer.sendAll(peerA, later) == 0)
            #expect(Peer.receive(peerB, expected: hello + later, limit: hello.count + later.count).firstMismatch == nil)
            #expect(Peer.receive(peerA, expected: reply, limit: reply.count).firstMismatch == nil)
            _ = shutdown(peerA, Int32(SHUT_WR))
            _ = shutdown(peerB, Int32(SHUT_WR))
            let result = try #require(second.wait())
            #expect(result.relayed == Relayed(bytesAtoB: UInt64(hello.count + later.count), bytesBtoA: UInt64(reply.count),
                                              end: .bothClosed))
            #expect(judged.value == [JudgedRead(side: .a, bytes: hello)])
            #expect(harness.result.peek == nil, "the first pump never completes")
        }

        /// A receiver too slow for the initial bytes: what it did not take is owed, byte exact.
        @Test func aHandOverReportsTheInitialBytesNotYetTakenExactly() throws {
            let initial = Pattern.bytes(2 * 1024 * 1024 + 3, seed: 0x6A7E)
            let harness = try PumpHarness(initialBtoA: initial, peerAReceiveBuffer: 4096, localASendBuffer: 4096)
            defer { harness.close() }
            let judged = Shared<[JudgedRead]>([])
            let handedOver = Latch<HandedOver>()
            let second = Latch<SpliceResult>()
            harness.startGated(judged: judged, handedOver: handedOver, relayAgain: second) { _ in .handOver }
            let (peerA, peerB) = (harness.peerA, harness.peerB)
            #expect(eventually { harness.pump.sync { $0.stalledSince != nil } }, "A takes only part of the initial bytes")

            let first = Array("x".utf8)
            #expect(Peer.sendAll(peerA, first) == 0)
            let handOver = try #require(handedOver.wait())
            let sent = harness.pump.sync { Int($0.bytesBtoA) }
            #expect(sent > 0 && sent < initial.count)
            #expect(handOver.owedToA == Array(initial[sent...]), "owed: exactly the initial bytes A had not taken")
            #expect(handOver.readFromA == first && handOver.owedToB.isEmpty)

            let atA = Worker { Peer.receive(peerA, expected: initial) }
            #expect(Peer.receive(peerB, expected: first, limit: first.count).firstMismatch == nil)
            _ = shutdown(peerB, Int32(SHUT_WR))
            _ = shutdown(peerA, Int32(SHUT_WR))
            let received = try #require(atA.join())
            #expect(received.count == initial.count && received.firstMismatch == nil && received.end == .eof)
            #expect(try #require(second.wait()).relayed
                == Relayed(bytesAtoB: 1, bytesBtoA: UInt64(handOver.owedToA.count), end: .bothClosed))
        }

        @Test func anEndOfStreamBeforeAnyByteIsJudgedAndPassedOn() throws {
            let harness = try PumpHarness()
            defer { harness.close() }
            let judged = Shared<[JudgedRead]>([])
            let handedOver = Latch<HandedOver>()
            harness.startGated(judged: judged, handedOver: handedOver) { _ in .relay }
            let (peerA, peerB) = (harness.peerA, harness.peerB)
            _ = shutdown(peerA, Int32(SHUT_WR))
            #expect(Peer.recvOnce(peerB) == 0, "A's end reached B")
            let reply = Array("bye".utf8)
            #expect(Peer.sendAll(peerB, reply) == 0)
            _ = shutdown(peerB, Int32(SHUT_WR))
            #expect(Peer.receive(peerA, expected: reply).count == reply.count)
            let result = try #require(harness.result.wait())
            #expect(result.relayed == Relayed(bytesAtoB: 0, bytesBtoA: UInt64(reply.count), end: .bothClosed))
            #expect(judged.value == [JudgedRead(side: .a, bytes: nil)])
        }

        @Test func anEndOfStreamHandedOverStillReadsAsEnded() throws {
            let harness = try PumpHarness()
            defer { harness.close() }
            let judged = Shared<[JudgedRead]>([])
            let handedOver = Latch<HandedOver>()
            harness.startGated(judged: judged, handedOver: handedOver) { _ in .handOver }
            _ = shutdown(harness.peerB, Int32(SHUT_WR))
            let handOver = try #require(handedOver.wait())
            #expect(handOver.readFromA.isEmpty && handOver.readFromB.isEmpty)
            #expect(judged.value == [JudgedRead(side: .b, bytes: nil)])
            #expect(Self.nothingArrives(harness.peerA), "B's end was not passed on")
            let readAgain = harness.pump.sync { _ in
                var byte: UInt8 = 0
                return recv(handOver.b, &byte, 1, 0)
            }
            #expect(readAgain == 0, "B's end is still there to read")
            harness.pump.sync { _ in
                _ = close(handOver.a)
                _ = close(handOver.b)
            }
        }

        @Test func aResetWhileGatedEndsTheRelayWithoutAJudgement() throws {
            let harness = try PumpHarness(initialBtoA: Self.established)
            defer { harness.close() }
            let judged = Shared<[JudgedRead]>([])
            let handedOver = Latch<HandedOver>()
            harness.startGated(judged: judged, handedOver: handedOver) { _ in .handOver }
            #expect(Peer.receive(harness.peerA, expected: Self.established, limit: Self.established.count).firstMismatch == nil)
            harness.resetPeerA()
            let result = try #require(harness.result.wait())
            #expect(result.relayed == Relayed(bytesAtoB: 0, bytesBtoA: UInt64(Self.established.count), end: .resetByA))
            #expect(Peer.recvOnce(harness.peerB) == -Int(ECONNRESET), "the reset is passed on to B")
            #expect(judged.value.isEmpty && handedOver.peek == nil)
        }
    }
}
