import CRelayShims
import Dispatch
import Glibc

/// What one read produced.
public enum ReadResult: Equatable, Sendable {
    case bytes(Int)
    case wouldBlock
    case eof
    case error(IOError)
}

/// One nonblocking stream socket owned by one loop. Its Dispatch sources are created only
/// when needed (an idle socket costs little) and the fd is closed exactly once, after every
/// source is cancelled. Loop-confined: touched only on `loop.queue`.
public final class StreamSocket: @unchecked Sendable {
    public let fd: Int32
    public let loop: EventLoop
    private var readSource: DispatchSourceRead?
    private var readSuspended = false
    private var writeSource: DispatchSourceWrite?
    private var writeSuspended = true
    private var onWritable: (() -> Void)?
    private var liveSources = 0
    private var closed = false
    private var detached = false

    public init(fd: Int32, loop: EventLoop) {
        self.fd = fd
        self.loop = loop
    }

    /// Calls `onReadable` whenever the socket is readable; it should read until `.wouldBlock`.
    public func startReading(_ onReadable: @escaping () -> Void) {
        precondition(readSource == nil && !closed, "startReading twice or after close")
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: loop.queue)
        source.setEventHandler(handler: onReadable)
        source.setCancelHandler { [self] in sourceCancelled() }
        liveSources += 1
        readSource = source
        readSuspended = false
        source.resume()
    }

    /// Stops read events until `resumeReading` (idempotent).
    public func pauseReading() {
        guard let source = readSource, !readSuspended else { return }
        readSuspended = true
        source.suspend()
    }

    /// Resumes read events (idempotent).
    public func resumeReading() {
        guard let source = readSource, readSuspended else { return }
        readSuspended = false
        source.resume()
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
        if writeSource == nil {
            let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: loop.queue)
            source.setEventHandler { [unowned self] in writable() }
            source.setCancelHandler { [self] in sourceCancelled() }
            liveSources += 1
            writeSource = source
        }
        if writeSuspended, let source = writeSource {
            writeSuspended = false
            source.resume()
        }
    }

    private func writable() {
        if let source = writeSource, !writeSuspended {
            writeSuspended = true
            source.suspend()
        }
        let callback = onWritable
        onWritable = nil
        callback?()
    }

    public func shutdownWrite() {
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    public func setNoDelay() {
        SocketOptions.setInt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// The next close sends a reset: used to pass an upstream's reset on to the client.
    public func setLinger0() {
        SocketOptions.setLinger0(fd)
    }

    /// Cancels the sources and closes the fd once they are gone (idempotent).
    public func close() {
        guard !closed else { return }
        closed = true
        cancelSources()
        if liveSources == 0 {
            Glibc.close(fd)
        }
    }

    /// Cancels the sources without closing: the caller now owns the fd (e.g. a splice relay).
    public func detachFD() -> Int32 {
        precondition(!closed, "detachFD after close")
        closed = true
        detached = true
        cancelSources()
        return fd
    }

    private func cancelSources() {
        onWritable = nil
        if let source = readSource {
            source.cancel()
            // A suspended source never runs its cancel handler; resume it so it can.
            if readSuspended { readSuspended = false; source.resume() }
            readSource = nil
        }
        if let source = writeSource {
            source.cancel()
            if writeSuspended { writeSuspended = false; source.resume() }
            writeSource = nil
        }
    }

    private func sourceCancelled() {
        liveSources -= 1
        if liveSources == 0 && closed && !detached {
            Glibc.close(fd)
        }
    }
}
