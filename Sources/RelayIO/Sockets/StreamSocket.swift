import CRelayShims
import Glibc

/// What one read produced.
public enum ReadResult: Equatable, Sendable {
    case bytes(Int)
    case wouldBlock
    case eof
    case error(IOError)
}

/// One nonblocking stream socket owned by one loop. It joins epoll only when someone wants
/// to read or write, and its fd is closed exactly once. Loop-confined: touched only on
/// `loop`'s thread.
public final class StreamSocket: @unchecked Sendable {
    public let fd: Int32
    public let loop: EventLoop
    private var registration: IORegistration?
    private var reading = false
    private var onWritable: (() -> Void)?
    private var closed = false

    public init(fd: Int32, loop: EventLoop) {
        self.fd = fd
        self.loop = loop
    }

    private var watched: IORegistration {
        if let registration { return registration }
        let registration = loop.register(fd)
        registration.onWritable = { [unowned self] in writable() }
        self.registration = registration
        return registration
    }

    /// Calls `onReadable` whenever the socket is readable; it should read until `.wouldBlock`.
    public func startReading(_ onReadable: @escaping () -> Void) {
        precondition(!closed, "startReading after close")
        watched.onReadable = { [unowned self] in
            // Paused lazily (see `pauseReading`): the first event while paused drops the interest.
            guard reading else { return updateInterest() }
            onReadable()
        }
        reading = true
        updateInterest()
    }

    /// Stops read events until `resumeReading` (idempotent). Lazily: epoll keeps watching
    /// until an event actually comes while paused, so a pause that ends before the peer
    /// speaks (a request waiting for its upstream) costs no system call, and a socket handed
    /// over meanwhile keeps its entry for the next owner.
    public func pauseReading() {
        reading = false
    }

    /// Resumes read events (idempotent).
    public func resumeReading() {
        guard !reading, !closed, registration?.onReadable != nil else { return }
        reading = true
        updateInterest()
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count > 0 { return .bytes(count) }
            if count == 0 { return .eof }
            switch errno {
            case EINTR: continue
            case EAGAIN: return .wouldBlock
            default:
                SocketOptions.checkNotProgrammerError(errno, "recv")
                return .error(IOError("recv", errno: errno))
            }
        }
    }

    /// Writes what the socket takes now: the count (0 when it would block), or the error
    /// (EPIPE, ECONNRESET: the peer is gone). Never raises SIGPIPE.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(IOError) -> Int {
        while true {
            let count = crelay_send_nosignal(fd, bytes.baseAddress, bytes.count)
            if count >= 0 { return count }
            switch errno {
            case EINTR: continue
            case EAGAIN: return 0
            default:
                SocketOptions.checkNotProgrammerError(errno, "send")
                throw IOError("send", errno: errno)
            }
        }
    }

    /// Calls `onWritable` once, when the socket can take more bytes.
    public func whenWritable(_ onWritable: @escaping () -> Void) {
        guard !closed else { return }
        self.onWritable = onWritable
        _ = watched
        updateInterest()
    }

    private func writable() {
        let callback = onWritable
        onWritable = nil
        updateInterest()
        callback?()
    }

    private func updateInterest() {
        guard !closed, let registration else { return }
        registration.setInterest(read: reading, write: onWritable != nil)
    }

    public func shutdownWrite() {
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    /// See `SocketOptions.tuneForRelay`: Nagle off, unsent bytes in the kernel bounded.
    public func tuneForRelay() {
        SocketOptions.tuneForRelay(fd)
    }

    /// The next close sends a reset: used to pass an upstream's reset on to the client.
    public func setLinger0() {
        SocketOptions.setLinger0(fd)
    }

    /// Stops watching and closes the fd (idempotent).
    public func close() {
        guard !closed else { return }
        closed = true
        forget(fdClosing: true)
        Glibc.close(fd)
    }

    /// Stops watching without closing: the caller now owns the fd and registers it again on
    /// this loop before the loop next waits (a splice relay taking over), which re-arms the
    /// epoll entry left for it (`IORegistration.deregisterHandingOver`).
    public func detachFD() -> Int32 {
        precondition(!closed, "detachFD after close")
        closed = true
        onWritable = nil
        registration?.deregisterHandingOver()
        registration = nil
        return fd
    }

    private func forget(fdClosing: Bool) {
        onWritable = nil
        registration?.deregister(fdClosing: fdClosing)
        registration = nil
    }
}
