import CRelayShims
import Glibc
import Synchronization

/// A listening socket watched by one or more loops. Each watching loop accepts for itself
/// and hands the connection over on its own thread, so a caller that keeps it there pays
/// no hop (an eventfd write and a wake-up); the kernel wakes one idle loop per readiness
/// (EPOLLEXCLUSIVE), which spreads bursts toward whichever loop has time, though clients
/// arriving one by one at idle loops all wake the same one.
/// Drains a bounded batch per event and backs off briefly when out of descriptors.
/// `start` and `stop` may be called from any thread; each loop's watch is confined to
/// that loop and reached only through its `LoopBound`.
public final class TCPListener: Sendable {
    /// One loop's interest in the socket. Loop-confined: touched only on its loop's thread.
    private final class Watch {
        let loop: EventLoop
        var registration: IORegistration?
        var backoff: LoopTimer?

        init(loop: EventLoop) {
            self.loop = loop
        }
    }

    /// Connections one loop accepts per readiness event before it lets the others take
    /// some: a level-triggered listener reports again while the backlog is not empty.
    static let acceptBatch = 16

    private let fd: Int32
    /// One per watching loop, set once by `start`.
    private let watches = Mutex<[LoopBound<Watch>]>([])
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
        start(on: [loop]) { fd, peer, _ in onAccept(fd, peer) }
    }

    /// Starts accepting on every loop of `loops`; `onAccept` runs on the loop that accepted,
    /// which should keep the connection.
    ///
    /// When the process is out of descriptors and `reserve` holds one, the waiting
    /// connections are accepted into it one at a time and handed to `onExhausted`, which
    /// must answer and close them before it returns; otherwise the listener stops watching
    /// for a moment and they wait in the backlog.
    public func start(on loops: [EventLoop], reserve: DescriptorReserve? = nil,
                      onExhausted: (@Sendable (_ fd: Int32, _ peer: SocketAddress) -> Void)? = nil,
                      onAccept: @escaping @Sendable (_ fd: Int32, _ peer: SocketAddress, _ loop: EventLoop) -> Void) {
        precondition(watches.withLock(\.isEmpty) && !loops.isEmpty, "start a listener once, on at least one loop")
        let started = loops.map { loop in
            loop.sync { [self] in
                let watch = Watch(loop: loop)
                let registration = loop.register(fd)
                registration.exclusive = loops.count > 1
                registration.onReadable = { [unowned self, unowned watch] in
                    acceptBatch(on: watch, reserve: reserve, onExhausted: onExhausted) { fd, peer in
                        onAccept(fd, peer, loop)
                    }
                }
                registration.setInterest(read: true, write: false)
                watch.registration = registration
                return LoopBound(watch, on: loop)
            }
        }
        watches.withLock { $0 = started }
    }

    /// Stops accepting and closes the socket; waits for the loops when called from elsewhere.
    public func stop() {
        guard !released.exchange(true, ordering: .relaxed) else { return }
        for watch in watches.withLock({ $0 }) {
            watch.loop.sync {
                let watch = watch.value
                watch.backoff?.cancel()
                watch.backoff = nil
                watch.registration?.deregister()
                watch.registration = nil
            }
        }
        close(fd)
    }

    /// Gives up ownership of a listener that was never started (for a caller doing its own accept).
    public func detachFD() -> Int32 {
        precondition(watches.withLock(\.isEmpty), "detachFD after start")
        precondition(!released.exchange(true, ordering: .relaxed), "detachFD after stop or detach")
        return fd
    }

    private func acceptBatch(on watch: Watch, reserve: DescriptorReserve?,
                             onExhausted: (@Sendable (Int32, SocketAddress) -> Void)?,
                             _ onAccept: (Int32, SocketAddress) -> Void) {
        for _ in 0..<Self.acceptBatch {
            var storage = sockaddr_storage()
            // errno is read by the reserve, which tells EMFILE apart.
            let accept = { () -> Int32 in
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                return withUnsafeMutablePointer(to: &storage) { address in
                    address.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                        retryingInterruptions { crelay_accept4_nonblocking(self.fd, address, &length) }
                    }
                }
            }
            let peer = { () -> SocketAddress? in withUnsafeBytes(of: &storage) { SocketAddress(storage: $0.baseAddress!) } }
            let outcome: DescriptorReserve.Outcome
            if let reserve, let onExhausted {
                outcome = reserve.accept(accept) { refused in
                    if let address = peer() { onExhausted(refused, address) } else { close(refused) }
                }
            } else {
                let client = accept()
                outcome = client >= 0 ? .accepted(client) : .failed(errno)
            }
            switch outcome {
            case .accepted(let client):
                guard let address = peer() else {
                    close(client)
                    continue
                }
                onAccept(client, address)
            case .refused:
                continue
            case .failed(ECONNABORTED), .failed(EPROTO):
                continue
            case .failed(EMFILE), .failed(ENFILE), .failed(ENOBUFS), .failed(ENOMEM):
                // Out of descriptors or memory with nothing held back: a level-triggered
                // readable listener would spin a core. Stop watching briefly; connections
                // wait in the backlog meanwhile.
                pauseAccepting(watch)
                return
            case .failed(let code):
                // EAGAIN: another loop took what was there.
                preconditionNotProgrammerError(code, "accept4")
                return
            }
        }
    }

    private func pauseAccepting(_ watch: Watch) {
        guard let registration = watch.registration, watch.backoff == nil else { return }
        registration.setInterest(read: false, write: false)
        watch.backoff = watch.loop.scheduleTimer(after: .milliseconds(100)) { [unowned watch] in
            watch.backoff = nil
            watch.registration?.setInterest(read: true, write: false)
        }
    }
}
