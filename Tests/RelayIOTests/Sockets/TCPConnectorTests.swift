import Dispatch
import Glibc
import RelayIO
import Testing

/// A listener whose accept queue is full and never drained: the kernel drops further SYNs,
/// so a new connect to it stays in progress (SYN_SENT) until its own deadline.
final class SaturatedListener {
    let fd: Int32
    let port: UInt16
    private var fillers: [Int32] = []

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let any = SocketAddress(ip: "127.0.0.1", port: 0)!
        guard fd >= 0, any.withSockAddr({ bind(fd, $0, $1) }) == 0, listen(fd, 0) == 0 else {
            throw IOError("listen", errno: errno)
        }
        self.fd = fd
        port = Peer.localPort(fd)
        // Open connections until one stays in progress for 100 ms: the queue is then full.
        for _ in 0..<16 {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            fillers.append(client)
            _ = address.withSockAddr { Glibc.connect(client, $0, $1) }
            var poller = pollfd(fd: client, events: Int16(POLLOUT), revents: 0)
            if poll(&poller, 1, 100) == 0 { return }
        }
        throw IOError("could not fill the accept queue", errno: EAGAIN)
    }

    var address: SocketAddress { SocketAddress(ip: "127.0.0.1", port: port)! }

    deinit {
        for client in fillers { close(client) }
        close(fd)
    }
}

/// A plain blocking listening socket the tests accept from by hand.
private func sideListener() throws -> (fd: Int32, address: SocketAddress) {
    let side = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard side >= 0, SocketAddress(ip: "127.0.0.1", port: 0)!.withSockAddr({ bind(side, $0, $1) }) == 0,
          listen(side, 64) == 0
    else { throw IOError("side listener", errno: errno) }
    return (side, SocketAddress(ip: "127.0.0.1", port: Peer.localPort(side))!)
}

/// Wraps `fd` in a StreamSocket on `loop` that appends whatever it reads to `received`.
private func readingSocket(_ fd: Int32, on loop: EventLoop, into received: Shared<[UInt8]>) -> StreamSocket {
    let socket = StreamSocket(fd: fd, loop: loop)
    socket.startReading {
        var buffer = [UInt8](repeating: 0, count: 16)
        if case .bytes(let count) = buffer.withUnsafeMutableBytes({ socket.read(into: $0) }) {
            received.update { $0 += buffer[..<count] }
        }
    }
    return socket
}

extension RelayIOSuite {
    @Suite struct TCPConnectorTests {
        let group = EventLoopGroup(count: 1)

        @Test func connectsAndHandsOverANonblockingSocket() throws {
            let listener = try TCPListener.bind(SocketAddress(ip: "127.0.0.1", port: 0)!)
            defer { listener.stop() }
            let accepted = Latch<SocketAddress>()
            listener.start(on: group.loops[0]) { fd, peer in
                accepted.set(peer)
                close(fd)
            }
            let outcome = Latch<Result<Int32, IOError>>()
            let completions = Shared(0)
            let loop = group.next()
            let attempt = loop.make {
                TCPConnector.connect(to: listener.localAddress, on: loop, timeout: .milliseconds(300)) {
                    precondition(loop.inLoop)
                    completions.update { $0 += 1 }
                    outcome.set($0)
                }
            }
            let fd = try #require(outcome.wait()).get()
            #expect(fcntl(fd, F_GETFL) & O_NONBLOCK != 0)
            #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0)
            let peer = try #require(accepted.wait())
            #expect(peer.port == Peer.localPort(fd))
            #expect(peer.ipString == "127.0.0.1")
            // Past the deadline: the attempt neither reports again nor closes what it handed over.
            let inode = try #require(Descriptors.inode(of: fd))
            usleep(400_000)
            loop.sync { attempt.value.cancel() }
            #expect(completions.value == 1)
            #expect(Descriptors.isOpenSocket(inode))
            close(fd)
        }

        /// A caller may close the connected fd inside the completion (its client went away).
        /// The next socket that takes the same number must still get events: the attempt
        /// must not hand the fd over while libdispatch still has it registered.
        @Test func closingTheHandedOverFDAtOnceLeavesItsNumberUsable() throws {
            let listener = try TCPListener.bind(SocketAddress(ip: "127.0.0.1", port: 0)!)
            defer { listener.stop() }
            listener.start(on: group.loops[0]) { fd, _ in close(fd) }
            let (side, sideAddress) = try sideListener()
            defer { close(side) }
            let loop = group.next()
            var reused = 0
            for round in 0..<20 {
                let received = Shared<[UInt8]>([])
                let next = Shared<LoopBound<StreamSocket>?>(nil)
                let handedOver = Latch<Bool>()
                loop.sync {
                    _ = TCPConnector.connect(to: listener.localAddress, on: loop, timeout: .seconds(5)) { result in
                        guard case .success(let fd) = result else { return handedOver.set(false) }
                        close(fd)
                        // The lowest free number is the one just closed.
                        guard case .success(let fresh) = Peer.connect(to: sideAddress) else { return handedOver.set(false) }
                        _ = fcntl(fresh, F_SETFL, fcntl(fresh, F_GETFL) | O_NONBLOCK)
                        let socket = readingSocket(fresh, on: loop, into: received)
                        next.update { $0 = LoopBound(socket, on: loop) }
                        handedOver.set(fd == fresh)
                    }
                }
                let sameNumber = try #require(handedOver.wait() as Bool?)
                if sameNumber { reused += 1 }
                let peer = accept(side, nil, nil)
                try #require(peer >= 0)
                defer { close(peer) }
                #expect(Peer.sendAll(peer, [7, 8, 9]) == 0)
                let delivered = eventually(within: .seconds(2)) { received.value == [7, 8, 9] }
                loop.sync { next.value?.value.close() }
                #expect(delivered, "round \(round): a socket reusing fd number of a handed-over fd got no read event")
                if !delivered { break }
            }
            #expect(reused > 0, "no round reused the number, so nothing was tested")
        }

        /// A connected socket keeps its disabled one-shot epoll entry (parked) for its next
        /// registration, which re-arms it: the new owner must get read events and the data.
        @Test func aHandedOverSocketRegisteredAgainGetsItsEvents() throws {
            let (side, sideAddress) = try sideListener()
            defer { close(side) }
            let loop = group.next()
            for round in 0..<5 {
                let received = Shared<[UInt8]>([])
                let owner = Shared<LoopBound<StreamSocket>?>(nil)
                let connected = Latch<Bool>()
                loop.sync {
                    _ = TCPConnector.connect(to: sideAddress, on: loop, timeout: .seconds(5)) { result in
                        guard case .success(let fd) = result else { return connected.set(false) }
                        owner.update { $0 = LoopBound(readingSocket(fd, on: loop, into: received), on: loop) }
                        connected.set(true)
                    }
                }
                try #require(connected.wait() == true)
                let peer = accept(side, nil, nil)
                try #require(peer >= 0)
                defer { close(peer) }
                #expect(Peer.sendAll(peer, [1, 2, UInt8(round)]) == 0)
                let delivered = eventually(within: .seconds(2)) { received.value == [1, 2, UInt8(round)] }
                loop.sync { owner.value?.value.close() }
                #expect(delivered, "round \(round): the re-registered socket got no read event")
            }
        }

        @Test func aClosedPortIsRefused() throws {
            let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let any = SocketAddress(ip: "127.0.0.1", port: 0)!
            #expect(any.withSockAddr { bind(probe, $0, $1) } == 0)
            let port = Peer.localPort(probe)
            close(probe)
            let before = Descriptors.openSocketInodes()
            let outcome = Latch<Result<Int32, IOError>>()
            let loop = group.next()
            loop.sync {
                _ = TCPConnector.connect(to: SocketAddress(ip: "127.0.0.1", port: port)!, on: loop,
                                         timeout: .seconds(5)) { outcome.set($0) }
            }
            let result = try #require(outcome.wait())
            #expect(throws: IOError.self) { try result.get() }
            if case .failure(let error) = result {
                #expect(error.errno == ECONNREFUSED)
            }
            // The refused socket (TCP state CLOSE, 7) is closed, not left behind. Only new
            // sockets count, and polling rides over a parallel test's fresh socket.
            #expect(eventually {
                Descriptors.tcpSockets().allSatisfy { before.contains($0.inode) || $0.state != 7 }
            })
        }

        @Test func aConnectThatNeverCompletesTimesOut() throws {
            let target = try SaturatedListener()
            let before = Descriptors.connectingSockets(to: target.port)
            let outcome = Latch<(Result<Int32, IOError>, UInt64)>()
            let started = monotonicNanos()
            let (address, loop) = (target.address, group.next())
            // A deadline long enough for a test thread stalled by the parallel suites to see
            // the socket while it still connects.
            let attempt = loop.make {
                TCPConnector.connect(to: address, on: loop, timeout: .seconds(1)) {
                    outcome.set(($0, monotonicNanos()))
                }
            }
            var ours: Set<UInt64> = []
            #expect(eventually { ours = Descriptors.connectingSockets(to: target.port).subtracting(before); return !ours.isEmpty })
            let (result, finished) = try #require(outcome.wait())
            let elapsed = Double(finished - started) / 1e6
            guard case .failure(let error) = result else {
                Issue.record("connected to a full accept queue: \(result)")
                return
            }
            #expect(error.errno == ETIMEDOUT)
            #expect(elapsed >= 950, "gave up after \(elapsed) ms, before its deadline")
            #expect(elapsed < 5_000, "the kernel's SYN retries ended it (\(elapsed) ms), not the deadline")
            #expect(ours.count == 1)
            for inode in ours {
                #expect(Descriptors.waitUntilClosed(inode), "the timed-out socket is still open")
            }
            _ = attempt
        }

        @Test func cancelInFlightClosesTheSocketAndNeverCompletes() throws {
            let target = try SaturatedListener()
            let before = Descriptors.connectingSockets(to: target.port)
            let completions = Shared(0)
            let (address, loop) = (target.address, group.next())
            let attempt = loop.make {
                TCPConnector.connect(to: address, on: loop, timeout: .seconds(1)) { _ in
                    completions.update { $0 += 1 }
                }
            }
            var ours: Set<UInt64> = []
            #expect(eventually { ours = Descriptors.connectingSockets(to: target.port).subtracting(before); return !ours.isEmpty })
            #expect(ours.count == 1)
            for inode in ours { #expect(Descriptors.isOpenSocket(inode)) }
            loop.sync { attempt.value.cancel() }
            for inode in ours {
                #expect(Descriptors.waitUntilClosed(inode), "the cancelled socket is still open")
            }
            usleep(1_200_000)  // past the 1 s deadline: the timer must be gone too
            #expect(completions.value == 0)
            loop.sync { attempt.value.cancel() }  // idempotent
        }

        @Test func cancelBeforeTheLoopStartsTheAttemptOpensNoSocket() throws {
            let target = try SaturatedListener()
            let before = Descriptors.connectingSockets(to: target.port)
            let completions = Shared(0)
            let (address, loop) = (target.address, group.next())
            loop.sync {
                let attempt = TCPConnector.connect(to: address, on: loop, timeout: .milliseconds(50)) { _ in
                    completions.update { $0 += 1 }
                }
                attempt.cancel()
            }
            usleep(200_000)
            loop.sync {}
            #expect(completions.value == 0)
            #expect(Descriptors.connectingSockets(to: target.port).subtracting(before).isEmpty)
        }
    }
}
