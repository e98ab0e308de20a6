import Foundation
import Glibc
import RelayIO
import Synchronization
import Testing

/// A `TLSRelayPump` between `openssl s_client` (side A, TLS, the relay in the server role)
/// and a plain loopback socket (side B) whose far end, `peerB`, the test drives.
private final class TLSPumpHarness: Sendable {
    let group = EventLoopGroup(count: 1)
    let loop: EventLoop
    let client: OpenSSLPeer
    let peerB: Int32
    let pump: LoopBound<TLSRelayPump>
    let pool: LoopBound<RelayBufferPool>
    let result = Latch<SpliceResult>()
    private let peerBClosed = Atomic<Bool>(false)

    init(clientInput: String? = nil, initialToClient: [UInt8] = [], initialToB: [UInt8] = []) throws {
        signal(SIGPIPE, SIG_IGN)
        loop = group.next()
        let files = TLSTestCertificates.shared
        let context = try TLSContext.server(certificateFile: files.certificate("server"), keyFile: files.key("server"),
                                            versions: .modern)
        let (listener, port) = try TLSTestDriver.listen()
        defer { close(listener) }
        // -nocommands: a line of the stream starting with Q, R or k is data, not a command.
        client = try OpenSSLPeer.client(port: port, quiet + ["-nocommands"], inputFile: clientInput)
        let accepted = try #require(TLSTestDriver.accept(listener))
        let pair = try LoopbackPair.make()
        peerB = pair.peer
        let eventLoop = loop
        pool = eventLoop.make { RelayBufferPool() }
        let buffers = pool
        pump = eventLoop.make {
            // The handshake blocks the loop's thread: nothing else runs on this test loop.
            let connection = try! TLSConnection(fd: accepted, context: context, role: .server)
            precondition(TLSTestDriver.handshake(connection) == .done, "handshake with s_client")
            return TLSRelayPump(a: .tls(connection), b: .plain(pair.local), loop: eventLoop, buffers: buffers.value,
                                initialBytesAtoB: initialToB, initialBytesBtoA: initialToClient)
        }
    }

    func start() {
        pump.sync { [result] pump in pump.start { result.set($0) } }
    }

    var lentBuffers: Int { pool.sync { $0.lent } }

    /// Closes B's far end with a reset (SO_LINGER 0) instead of a FIN.
    func resetPeerB() {
        guard !peerBClosed.exchange(true, ordering: .relaxed) else { return }
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(peerB, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close(peerB)
    }

    deinit {
        client.stop()
        if !peerBClosed.load(ordering: .relaxed) { close(peerB) }
    }
}

extension RelayIOSuite {
    @Suite struct TLSRelayPumpTests {
        @Test func linesGoThroughToAPlainEchoAndBothClosesArePassedOn() throws {
            let harness = try TLSPumpHarness()
            harness.start()
            let peerB = harness.peerB
            // An echo server: what comes is sent back; at EOF it ends its own stream.
            let echo = Worker { () -> Int in
                var buffer = [UInt8](repeating: 0, count: 4096)
                var total = 0
                while true {
                    let got = buffer.withUnsafeMutableBytes { recv(peerB, $0.baseAddress, $0.count, 0) }
                    if got <= 0 { break }
                    total += got
                    _ = Peer.sendAll(peerB, Array(buffer[..<got]))
                }
                shutdown(peerB, Int32(SHUT_WR))
                return total
            }
            harness.client.send("hello through the relay\n")
            #expect(eventually(within: .seconds(10)) { harness.client.output.contains("hello through the relay") })
            // close_notify from A reaches B as EOF; B's end reaches A.
            harness.client.closeInput()
            #expect(echo.join() == 24)
            let result = try #require(harness.result.wait())
            #expect(result.bytesAtoB == 24)
            #expect(result.bytesBtoA == 24)
            #expect(result.end == .bothClosed)
            #expect(harness.lentBuffers == 0)
        }

        /// Bytes owed to each side (a `200`, judged handshake bytes) go out before anything
        /// relayed, through TLS on the TLS side, and count with the bytes written.
        @Test func initialBytesGoFirstAndAreCounted() throws {
            let harness = try TLSPumpHarness(initialToClient: Array("owed to A\n".utf8), initialToB: Array("owed to B".utf8))
            harness.start()
            let peerB = harness.peerB
            let owed = Peer.receive(peerB, expected: Array("owed to B".utf8), limit: 9)
            #expect(owed.count == 9 && owed.firstMismatch == nil)
            _ = Peer.sendAll(peerB, Array("relayed\n".utf8))
            #expect(eventually(within: .seconds(10)) { harness.client.output.contains("owed to A\nrelayed\n") })
            harness.client.closeInput()
            shutdown(peerB, Int32(SHUT_WR))
            let result = try #require(harness.result.wait())
            #expect(result.bytesAtoB == 9)
            #expect(result.bytesBtoA == 18)
        }

        @Test func thirtyTwoMebibytesFromThePlainSideThenItsEndReachTheTLSClient() throws {
            let harness = try TLSPumpHarness()
            harness.start()
            let bytes = Pattern.bytes(32 << 20, seed: 17)
            let peerB = harness.peerB
            let sender = Worker { () -> Int32 in
                let code = Peer.sendAll(peerB, bytes)
                shutdown(peerB, Int32(SHUT_WR))
                return code
            }
            #expect(sender.join(.seconds(120)) == 0)
            // s_client prints all it got, then exits at the close_notify passed on.
            #expect(harness.client.waitForExit(within: .seconds(120)))
            let printed = harness.client.outputBytes
            // Compared apart: a failed expectation would print 32 MiB.
            let same = printed == bytes
            if !same {
                let firstDifference = (0..<min(printed.count, bytes.count)).first { printed[$0] != bytes[$0] }
                Issue.record("printed \(printed.count) bytes, first difference at \(String(describing: firstDifference))")
            }
            // Its own end (close_notify or FIN as it exits) reaches B.
            #expect(Peer.receive(peerB, expected: []).end == .eof)
            let result = try #require(harness.result.wait())
            #expect(result.bytesBtoA == UInt64(bytes.count))
            #expect(result.end == .bothClosed)
        }

        @Test func thirtyTwoMebibytesFromTheTLSClientThenItsCloseNotifyReachThePlainSide() throws {
            let bytes = Pattern.bytes(32 << 20, seed: 23)
            let file = TLSTestCertificates.shared.path("upload-\(UInt32.random(in: 0...UInt32.max)).bin")
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            defer { unlink(file) }
            let harness = try TLSPumpHarness(clientInput: file)
            harness.start()
            let received = Peer.receive(harness.peerB, expected: bytes)
            #expect(received.count == bytes.count)
            #expect(received.firstMismatch == nil)
            #expect(received.end == .eof)
            // B, half-closed towards it, still ends its own stream for the relay to finish.
            shutdown(harness.peerB, Int32(SHUT_WR))
            let result = try #require(harness.result.wait(.seconds(30)))
            #expect(result.bytesAtoB == UInt64(bytes.count))
            #expect(result.end == .bothClosed)
        }

        /// A bare FIN may be a cut: the plain side must not read it as the stream's end.
        @Test func aBareFINFromTheTLSSideResetsThePlainSide() throws {
            let harness = try TLSPumpHarness()
            harness.start()
            harness.client.send("x\n")
            #expect(Peer.recvOnce(harness.peerB) == 2)
            // s_client has read all that came (the session tickets before it): with nothing
            // unread in its socket, the kernel ends it with a FIN, not a reset.
            _ = Peer.sendAll(harness.peerB, Array("y\n".utf8))
            #expect(eventually(within: .seconds(10)) { harness.client.output.contains("y\n") })
            harness.client.kill()
            let result = try #require(harness.result.wait())
            #expect(result.end == .truncatedByA)
            #expect(result.bytesAtoB == 2)
            #expect(result.bytesBtoA == 2)
            #expect(Peer.recvOnce(harness.peerB) == -Int(ECONNRESET))
            #expect(harness.lentBuffers == 0)
        }

        /// A buffer is lent only while bytes move: thousands of quiet tunnels hold none.
        @Test func aQuietRelayHoldsNoBuffer() throws {
            let harness = try TLSPumpHarness()
            harness.start()
            harness.client.send("x\n")
            #expect(Peer.recvOnce(harness.peerB) == 2)
            _ = Peer.sendAll(harness.peerB, Array("y\n".utf8))
            #expect(eventually(within: .seconds(10)) { harness.client.output.contains("y\n") })
            #expect(eventually(within: .seconds(10)) { harness.lentBuffers == 0 })
            harness.pump.sync { $0.abort() }
            _ = try #require(harness.result.wait())
        }

        /// The plain side's bytes and then its reset, both queued before the relay reads: the
        /// read that fills the buffer meets the reset, which must still end the relay as a
        /// reset once the bytes are through (read again, a reset socket says end of stream).
        @Test func bytesAheadOfAResetAreDeliveredThenTheResetEndsTheRelay() throws {
            let harness = try TLSPumpHarness()
            let bytes = Pattern.bytes(40 * 1024, seed: 5)
            #expect(Peer.sendAll(harness.peerB, bytes) == 0)
            usleep(100_000)
            harness.resetPeerB()
            harness.start()
            let result = try #require(harness.result.wait())
            #expect(result.end == .resetByB)
            #expect(result.bytesBtoA == UInt64(bytes.count))
            #expect(harness.lentBuffers == 0)
        }

        @Test func abortResetsBothSides() throws {
            let harness = try TLSPumpHarness()
            harness.start()
            harness.client.send("x\n")
            #expect(Peer.recvOnce(harness.peerB) == 2)
            harness.pump.sync { $0.abort() }
            let result = try #require(harness.result.wait())
            #expect(result.end == .aborted)
            #expect(Peer.recvOnce(harness.peerB) == -Int(ECONNRESET))
            #expect(harness.lentBuffers == 0)
        }
    }
}
