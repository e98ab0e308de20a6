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
/// to read or write, and its fd is closed exactly once. Loop-confined: made anywhere, then
/// touched only on `loop`'s thread (another thread reaches it only inside a `LoopBound`).
public final class StreamSocket {
    public let fd: Int32
    public let loop: EventLoop
    private var registration: IORegistration?
    private var reading = false
    private var onWritable: (() -> Void)?
    private var closed = false

    /// Wraps `fd` (nonblocking, owned from now on) for `loop`.
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
        loop.preconditionInLoop()
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
        loop.assertInLoop()
        reading = false
    }

    /// Resumes read events (idempotent).
    public func resumeReading() {
        loop.assertInLoop()
        guard !reading, !closed, registration?.onReadable != nil else { return }
        reading = true
        updateInterest()
    }

    /// One recv(2) into `buffer`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        loop.assertInLoop()
        do throws(IOError) {
            switch try systemCall("recv", { recv(fd, buffer.baseAddress, buffer.count, 0) }) {
            case .processed(0): return .eof
            case .processed(let count): return .bytes(count)
            case .wouldBlock: return .wouldBlock
            }
        } catch {
            return .error(error)
        }
    }

    /// Writes what the socket takes now: the count (0 when it would block), or the error
    /// (EPIPE, ECONNRESET: the peer is gone). Never raises SIGPIPE.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(IOError) -> Int {
        loop.assertInLoop()
        switch try systemCall("send", { crelay_send_nosignal(fd, bytes.baseAddress, bytes.count) }) {
        case .processed(let count): return count
        case .wouldBlock: return 0
        }
    }

    /// Calls `onWritable` once, when the socket can take more bytes.
    public func whenWritable(_ onWritable: @escaping () -> Void) {
        loop.preconditionInLoop()
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

    /// Sends FIN after what is queued; reading goes on.
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
        loop.preconditionInLoop()
        guard !closed else { return }
        closed = true
        forget(fdClosing: true)
        Glibc.close(fd)
    }

    /// Stops watching without closing: the caller now owns the fd and registers it again on
    /// this loop before the loop next waits (a splice relay taking over), which re-arms the
    /// epoll entry left for it (`IORegistration.deregisterHandingOver`).
    public func detachFD() -> Int32 {
        loop.preconditionInLoop()
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
