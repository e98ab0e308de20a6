import CRelayShims
import Dispatch
import Glibc

/// A listening socket. Accepts on its own queue, draining the backlog per event (libdispatch
/// re-arms one-shot epoll after each handler), and hands each nonblocking fd out.
/// State is touched only on `queue`.
public final class TCPListener: @unchecked Sendable {
    private let fd: Int32
    private let queue: DispatchQueue
    private var source: DispatchSourceRead?
    private var suspendedForFDs = false
    /// Set by `stop()` or `detachFD()`: the fd is closed or no longer ours, and its number
    /// may already belong to another file.
    private var released = false
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
        self.queue = DispatchQueue(label: "dynrelay.accept.\(localAddress)", qos: .userInitiated)
    }

    /// Starts accepting; `onAccept` runs on the accept queue with a nonblocking, close-on-exec fd.
    public func start(onAccept: @escaping @Sendable (_ fd: Int32, _ peer: SocketAddress) -> Void) {
        queue.sync {
            let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
            source.setEventHandler { [unowned self] in acceptAll(onAccept) }
            let fd = self.fd
            source.setCancelHandler { close(fd) }
            self.source = source
            source.resume()
        }
    }

    /// Stops accepting and closes the socket (in the source's cancel handler, never before it).
    public func stop() {
        queue.sync {
            guard !released else { return }
            released = true
            guard let source else {
                close(fd)
                return
            }
            source.cancel()
            if suspendedForFDs {
                suspendedForFDs = false
                source.resume()
            }
            self.source = nil
        }
    }

    /// Gives up ownership of a listener that was never started (for a caller doing its own accept).
    public func detachFD() -> Int32 {
        queue.sync {
            precondition(source == nil && !released, "detachFD after start, stop or detachFD")
            released = true
            return fd
        }
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
                // Out of descriptors: spinning on a readable listener would burn a core.
                // Pause accepting briefly; connections wait in the backlog meanwhile.
                pauseAccepting()
                return
            default:
                SocketOptions.checkNotProgrammerError(errno, "accept4")
                return
            }
        }
    }

    private func pauseAccepting() {
        guard let source, !suspendedForFDs else { return }
        suspendedForFDs = true
        source.suspend()
        queue.asyncAfter(deadline: .now() + .milliseconds(100)) { [weak self] in
            guard let self, self.suspendedForFDs, let source = self.source else { return }
            self.suspendedForFDs = false
            source.resume()
        }
    }
}
