import CRelayShims
import Glibc

/// Closes a socket without turning the close into a reset: sends FIN after whatever is
/// still queued for the peer, then reads and throws away what the peer goes on sending
/// until its FIN, an error or `deadline`, and only then closes. (Linux answers the close of
/// a socket with unread data by a reset, which also discards what was queued for the peer:
/// the end of a reply it has not read yet.) A peer still sending at the deadline may get
/// that reset anyway: what is waiting is read first, but more can arrive before the close.
/// Loop-confined: touched only on its loop's thread; it keeps itself alive until it ends.
public final class LingeringClose {
    /// How long a peer that keeps sending is waited for.
    static let deadline: Duration = .seconds(2)

    private let fd: Int32
    private let loop: EventLoop
    /// Where dropped bytes are read to: the loop's copy buffer, free between handlers.
    private let pipes: PipePool
    private var registration: IORegistration?
    private var timer: LoopTimer?
    /// Holds this object while it lingers (the loop's handlers and timer hold it only weakly).
    private var keepAlive: LingeringClose?
    /// Runs once the descriptor is closed: whoever counts connections counts this one until then.
    private var closed: (() -> Void)?

    /// Starts lingering on `fd`, which must not be registered with `loop`; call on the loop.
    /// `pipes` is the loop's pool, whose copy buffer takes the dropped bytes; `closed` runs
    /// on the loop once `fd` is closed.
    public static func start(_ fd: Int32, on loop: EventLoop, pipes: PipePool, closed: (() -> Void)?) -> LingeringClose {
        loop.preconditionInLoop()
        let closer = LingeringClose(fd: fd, loop: loop, pipes: pipes, closed: closed)
        closer.begin()
        return closer
    }

    private init(fd: Int32, loop: EventLoop, pipes: PipePool, closed: (() -> Void)?) {
        self.fd = fd
        self.loop = loop
        self.pipes = pipes
        self.closed = closed
    }

    private func begin() {
        keepAlive = self
        _ = shutdown(fd, Int32(SHUT_WR))
        let registration = loop.register(fd)
        registration.onReadable = { [weak self] in self?.discard() }
        registration.setInterest(read: true, write: false)
        self.registration = registration
        timer = loop.scheduleTimer(after: Self.deadline) { [weak self] in
            self?.dropWaiting()
            self?.end()
        }
    }

    private func discard() {
        // Bounded like any handler: level-triggered epoll reports what is left.
        for _ in 0..<32 {
            switch readAndDrop() {
            case .processed(let count)? where count > 0: continue
            case .wouldBlock?: return
            default: return end()  // the peer's FIN, or an error: nothing more to wait for
            }
        }
    }

    /// At the deadline: reads what is waiting (bounded), so the close finds no unread bytes
    /// if the peer has paused.
    private func dropWaiting() {
        for _ in 0..<64 {
            guard case .processed(let count)? = readAndDrop(), count > 0 else { return }
        }
    }

    /// One recv into the loop's copy buffer, whose bytes nobody reads; nil after an error.
    private func readAndDrop() -> SystemCallResult<Int>? {
        try? systemCall("recv") { recv(fd, pipes.copyBuffer.baseAddress, pipes.copyBuffer.count, Int32(MSG_DONTWAIT)) }
    }

    private func end() {
        guard let registration else { return }
        self.registration = nil
        timer?.cancel()
        timer = nil
        registration.deregister(fdClosing: true)
        close(fd)
        let closed = self.closed
        self.closed = nil
        keepAlive = nil
        closed?()
    }
}
