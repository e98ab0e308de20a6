import Dispatch
import Glibc
import RelayIO
import Testing

extension RelayIOSuite {
    @Suite struct TCPListenerTests {
        let group = EventLoopGroup(count: 1)

        /// Both ends of `count` new pipes: whatever number a stopped listener freed is
        /// likely among them.
        static func openPipes(_ count: Int) -> [Int32] {
            var fds: [Int32] = []
            for _ in 0..<count {
                var pair: [Int32] = [0, 0]
                if pipe(&pair) == 0 { fds += pair }
            }
            return fds
        }

        @Test func acceptsTwoHundredConnectionsEachExactlyOnce() throws {
            let listener = try TCPListener.bind(SocketAddress(ip: "127.0.0.1", port: 0)!)
            defer { listener.stop() }
            let accepted = Shared<[SocketAddress]>([])
            let flagsOK = Shared(true)
            listener.start(on: group.loops[0]) { fd, peer in
                let nonblocking = fcntl(fd, F_GETFL) & O_NONBLOCK != 0
                let cloexec = fcntl(fd, F_GETFD) & FD_CLOEXEC != 0
                if !(nonblocking && cloexec) { flagsOK.update { $0 = false } }
                accepted.update { $0.append(peer) }
                close(fd)
            }
            var clientPorts: [UInt16] = []
            var clients: [Int32] = []
            defer { for fd in clients { close(fd) } }
            for _ in 0..<200 {
                let fd = try Peer.connect(to: listener.localAddress).get()
                clients.append(fd)
                clientPorts.append(Peer.localPort(fd))
            }
            #expect(eventually(within: .seconds(10)) { accepted.value.count >= 200 })
            usleep(50_000)
            let peers = accepted.value
            #expect(peers.count == 200)
            #expect(Set(peers.map(\.port)) == Set(clientPorts))
            #expect(Set(peers).count == peers.count, "a connection was handed out twice")
            #expect(peers.allSatisfy { $0.ipString == "127.0.0.1" })
            #expect(flagsOK.value, "accepted fds must be nonblocking and close-on-exec")
        }

        @Test func everyLoopAcceptsForItselfAndEachConnectionOnce() throws {
            let loops = EventLoopGroup(count: 2)
            let listener = try TCPListener.bind(SocketAddress(ip: "127.0.0.1", port: 0)!)
            let accepted = Shared<[UInt16]>([])
            let onWrongLoop = Shared(0)
            listener.start(on: loops.loops) { fd, peer, loop in
                if !loop.inLoop { onWrongLoop.update { $0 += 1 } }
                accepted.update { $0.append(peer.port) }
                close(fd)
            }
            var clientPorts: [UInt16] = []
            var clients: [Int32] = []
            defer { for fd in clients { close(fd) } }
            for _ in 0..<300 {
                let fd = try Peer.connect(to: listener.localAddress).get()
                clients.append(fd)
                clientPorts.append(Peer.localPort(fd))
            }
            #expect(eventually(within: .seconds(10)) { accepted.value.count >= 300 })
            usleep(50_000)
            #expect(accepted.value.count == 300)
            #expect(Set(accepted.value) == Set(clientPorts), "a connection was lost or handed out twice")
            #expect(onWrongLoop.value == 0, "a connection was handed out on another loop than the one that accepted it")
            // Stopped on both loops, the socket is closed: nothing listens there any more.
            let address = listener.localAddress
            listener.stop()
            #expect(throws: (any Error).self) { _ = try Peer.connect(to: address).get() }
        }

        @Test func stopClosesTheListeningSocket() throws {
            let listener = try TCPListener.bind(SocketAddress(ip: "127.0.0.1", port: 0)!)
            let address = listener.localAddress
            listener.start(on: group.loops[0]) { fd, _ in close(fd) }
            let first = try Peer.connect(to: address).get()
            close(first)
            let inode = try #require(Descriptors.listeningSocket(on: address.port))
            #expect(Descriptors.isOpenSocket(inode))
            listener.stop()
            #expect(Descriptors.waitUntilClosed(inode), "the listening socket is still open")
            #expect(eventually {
                if case .failure(let error) = Peer.connect(to: address), error.errno == ECONNREFUSED { return true }
                return false
            }, "connects still succeed after stop()")
        }

        /// stop() twice (a shutdown path that runs twice) must not close whatever descriptor
        /// reused the listener's number in between.
        @Test func stopTwiceLeavesOtherDescriptorsAlone() throws {
            let listener = try TCPListener.bind(SocketAddress(ip: "127.0.0.1", port: 0)!)
            let address = listener.localAddress
            listener.start(on: group.loops[0]) { fd, _ in close(fd) }
            listener.stop()
            #expect(eventually {
                if case .failure(let error) = Peer.connect(to: address), error.errno == ECONNREFUSED { return true }
                return false
            })
            // Whatever the process opens next may take the freed number; take several.
            let fds = Self.openPipes(8)
            defer { for fd in fds { close(fd) } }
            listener.stop()
            listener.stop()
            usleep(20_000)
            for fd in fds {
                #expect(fcntl(fd, F_GETFD) != -1, "fd \(fd) was closed by a repeated stop()")
            }
        }

        @Test func stopWithoutStartClosesOnce() throws {
            let listener = try TCPListener.bind(SocketAddress(ip: "127.0.0.1", port: 0)!)
            let address = listener.localAddress
            listener.stop()
            if case .success(let fd) = Peer.connect(to: address) {
                close(fd)
                Issue.record("connect succeeded after stop()")
            }
            let fds = Self.openPipes(8)
            defer { for fd in fds { close(fd) } }
            listener.stop()
            for fd in fds {
                #expect(fcntl(fd, F_GETFD) != -1, "fd \(fd) was closed by a repeated stop()")
            }
        }

        @Test func detachFDHandsOverAListeningSocket() throws {
            let listener = try TCPListener.bind(SocketAddress(ip: "127.0.0.1", port: 0)!)
            let fd = listener.detachFD()
            defer { close(fd) }
            let client = try Peer.connect(to: listener.localAddress).get()
            defer { close(client) }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            #expect(poll(&poller, 1, 5_000) == 1)
            let accepted = accept(fd, nil, nil)
            #expect(accepted >= 0)
            if accepted >= 0 { close(accepted) }
        }

        @Test func listensOnIPv6Loopback() throws {
            let listener = try TCPListener.bind(SocketAddress(ip: "::1", port: 0)!)
            defer { listener.stop() }
            #expect(listener.localAddress.family == AF_INET6)
            #expect(listener.localAddress.ipString == "::1")
            #expect(listener.localAddress.port != 0)
            let accepted = Latch<SocketAddress>()
            listener.start(on: group.loops[0]) { fd, peer in
                accepted.set(peer)
                close(fd)
            }
            let loop = group.next()
            let outcome = Latch<Result<Int32, IOError>>()
            loop.sync {
                _ = TCPConnector.connect(to: listener.localAddress, on: loop, timeout: .seconds(5)) { outcome.set($0) }
            }
            let fd = try #require(outcome.wait()).get()
            let peer = try #require(accepted.wait())
            #expect(peer.family == AF_INET6)
            #expect(peer.ipString == "::1")
            #expect(peer.port == Peer.localPort(fd))
            #expect(peer.description == "[::1]:\(peer.port)")
            loop.sync {}
            loop.sync { _ = close(fd) }
        }
    }
}
