import CRelayShims
import Glibc
import Synchronization

/// A listening socket on one loop. Drains the backlog per readiness event and hands each
/// nonblocking fd out; backs off briefly when the process is out of descriptors.
/// Loop-confined once started: touched only on its loop's thread.
public final class TCPListener: @unchecked Sendable {
    private let fd: Int32
    private var loop: EventLoop?
    private var registration: IORegistration?
    private var backoff: LoopTimer?
    /// Set once the fd is closed or handed away: a second stop() must not close whatever
    /// now has that number.
    private let released = Atomic<Bool>(false)
    public let localAddress: SocketAddress

    /// Binds and listens (SO_REUSEADDR; IPv6 sockets are IPv6-only).
    public static func bind(_ address: SocketAddress, backlog: Int32 = 4096) throws -> TCPListener {
        let fd = try SocketOptions.streamSocket(family: address.family)
        SocketOptions.setInt(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        if address.family == AF_INET6 {
            SocketOptions.setInt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1)
        }
        let bound = address.withSockAddr { Glibc.bind(fd, $0, $1) }
        guard bound == 0, listen(fd, backlog) == 0 else {
            let error = IOError("bind \(address)", errno: errno)
            close(fd)
            throw error
        }
        return try TCPListener(adoptingFD: fd)
    }

    /// Adopts an already listening socket (systemd socket activation); makes it nonblocking.
    public init(adoptingFD fd: Int32) throws {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw IOError("fcntl", errno: errno)
        }
        self.fd = fd
        self.localAddress = try SocketAddress.local(of: fd)
    }

    /// Starts accepting on `loop`; `onAccept` runs there with a nonblocking, close-on-exec fd.
    public func start(on loop: EventLoop, onAccept: @escaping @Sendable (_ fd: Int32, _ peer: SocketAddress) -> Void) {
        self.loop = loop
        loop.sync { [self] in
            let registration = loop.register(fd)
            registration.onReadable = { [unowned self] in acceptAll(onAccept) }
            registration.setInterest(read: true, write: false)
            self.registration = registration
        }
    }

    /// Stops accepting and closes the socket; waits for the loop when called from elsewhere.
    public func stop() {
        guard !released.exchange(true, ordering: .relaxed) else { return }
        guard let loop else {
            close(fd)
            return
        }
        loop.sync { [self] in
            backoff?.cancel()
            backoff = nil
            registration?.deregister()
            registration = nil
            close(fd)
        }
    }

    /// Gives up ownership of a listener that was never started (for a caller doing its own accept).
    public func detachFD() -> Int32 {
        precondition(loop == nil, "detachFD after start")
        precondition(!released.exchange(true, ordering: .relaxed), "detachFD after stop or detach")
        return fd
    }

    private func acceptAll(_ onAccept: (Int32, SocketAddress) -> Void) {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { crelay_accept4_nonblocking(fd, $0, &length) }
            }
            if client >= 0 {
                let peer = withUnsafeBytes(of: &storage) { SocketAddress(storage: $0.baseAddress!) }
                guard let peer else {
                    close(client)
                    continue
                }
                onAccept(client, peer)
                continue
            }
            switch errno {
            case EINTR, ECONNABORTED, EPROTO:
                continue
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                // Out of descriptors: a level-triggered readable listener would spin a core.
                // Stop watching briefly; connections wait in the backlog meanwhile.
                pauseAccepting()
                return
            default:
                SocketOptions.checkNotProgrammerError(errno, "accept4")
                return
            }
        }
    }

    private func pauseAccepting() {
        guard let loop, let registration, backoff == nil else { return }
        registration.setInterest(read: false, write: false)
        backoff = loop.scheduleTimer(after: .milliseconds(100)) { [self] in
            backoff = nil
            self.registration?.setInterest(read: true, write: false)
        }
    }
}
