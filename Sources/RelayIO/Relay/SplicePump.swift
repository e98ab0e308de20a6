import CRelayShims
import Glibc

/// How a relay ended, and how many bytes went each way.
public struct SpliceResult: Sendable, Equatable {
    public enum End: Sendable, Equatable {
        /// Both sides closed in order (each direction saw EOF and was shut down).
        case bothClosed
        case resetByA
        case resetByB
        /// `abort()` was called (idle timeout, shutdown).
        case aborted
        case error(IOError)
    }

    public var bytesAtoB: UInt64
    public var bytesBtoA: UInt64
    public var end: End
}

/// Relay between two connected plain-TCP sockets: splice(2) socket → pipe → socket in each
/// direction, in the kernel, for bulk streams (small reads are copied, see below). Full
/// duplex with half-close: EOF from A is passed on as shutdown(SHUT_WR) on B once A's bytes
/// are delivered, while B → A keeps flowing. A reset on one side is passed on as a reset of
/// the other, except a reset after that side's own FIN: what it sent is still delivered
/// whole, then a FIN (see `deliverBeforeEnding`).
///
/// The process must ignore SIGPIPE: splice(2) into a socket its peer reset raises it
/// (only send(2) can be told not to, and it is).
///
/// Small reads are copied instead: a direction starts by recv(2)-ing into the loop's 16 KiB
/// copy buffer and send(2)-ing it on, which for a request or a reply costs less than two
/// splices and a pipe. The first read that fills the buffer marks a bulk stream, and that
/// direction splices from then on. Bytes the receiver does not take at once are kept (at
/// most one buffer's worth) and the direction reads nothing more until they are out.
///
/// Backpressure: when the receiving socket is full the sending side is not read until it
/// drains, so at most one pipe of bytes is in flight per direction. A direction holds a pipe
/// only while bytes are in it.
/// Loop-confined: made anywhere, then touched only on `loop`'s thread, hence
/// `@exclusivity(unchecked)` on its state (see EventLoop).
public final class SplicePump {
    /// After this many rounds (copies or splices) in one event, yield so one fast stream
    /// cannot starve the other connections of the loop (the socket stays readable, so the
    /// event returns).
    private static let roundsPerEvent = 32

    private final class Direction {
        let from: Int32
        let to: Int32
        let isAtoB: Bool
        /// Bytes to write to `to` before anything else: the caller's initial bytes, or the
        /// part of a copied read the receiver did not take (at most one copy buffer).
        @exclusivity(unchecked) var unsent: [UInt8]
        @exclusivity(unchecked) var unsentOffset = 0
        @exclusivity(unchecked) var pipe: SplicePipe?
        @exclusivity(unchecked) var inPipe = 0
        @exclusivity(unchecked) var sawEOF = false
        /// The last read from `from` took less than it could: the socket is most likely
        /// drained, so wait for readiness instead of probing for EAGAIN.
        @exclusivity(unchecked) var drained = false
        /// Reads are copied through the loop's buffer until one fills it (see the type).
        @exclusivity(unchecked) var copiesReads = true
        @exclusivity(unchecked) var finished = false
        @exclusivity(unchecked) var bytes: UInt64 = 0
        /// Wants readiness of `from` (nothing buffered, waiting for bytes).
        @exclusivity(unchecked) var reading = true
        /// Waits for `to` to take more bytes.
        @exclusivity(unchecked) var waitingWritable = false
        /// Monotonic nanoseconds since `to` last took a byte while bytes waited for it; 0
        /// when nothing waits (see `SplicePump.stalledSince`).
        @exclusivity(unchecked) var blockedSince: UInt64 = 0
        /// `from` reported an error while this direction was held back: its entry left
        /// epoll, so the error is acted on when the direction finishes, if no read met it.
        @exclusivity(unchecked) var failedWhileHeld = false
        /// Its receiver is gone (see `deliverBeforeEnding`): what `from` sends is read and
        /// dropped, so a sender that writes before it reads is not left blocked.
        @exclusivity(unchecked) var discards = false

        init(from: Int32, to: Int32, isAtoB: Bool, unsent: [UInt8]) {
            self.from = from
            self.to = to
            self.isAtoB = isAtoB
            self.unsent = unsent
        }
    }

    private let a: Int32
    private let b: Int32
    private let loop: EventLoop
    private let pipes: PipePool
    private let aToB: Direction
    private let bToA: Direction
    @exclusivity(unchecked) private var completion: ((SpliceResult) -> Void)?
    @exclusivity(unchecked) private var released: (() -> Void)?
    @exclusivity(unchecked) private var ended = false
    /// How the relay ends once the direction still delivering is done: set when a side that
    /// had ended its own stream in order then reset (see `deliverBeforeEnding`).
    @exclusivity(unchecked) private var endAfterDelivery: (end: SpliceResult.End, cause: Int32)?
    @exclusivity(unchecked) private var registrationA: IORegistration?
    @exclusivity(unchecked) private var registrationB: IORegistration?
    /// Monotonic nanoseconds of the last event that moved bytes (for idle sweeps).
    @exclusivity(unchecked) public private(set) var lastActivity: UInt64

    /// Takes ownership of both fds. `initialBytesAtoB`/`initialBytesBtoA` are written before
    /// anything spliced (e.g. a pipelined TLS ClientHello, and the `200` for the client).
    /// `tuneSockets`: `SocketOptions.tuneForRelay` both sockets, for callers that did not
    /// already.
    public init(a: Int32, b: Int32, loop: EventLoop, pipes: PipePool,
                initialBytesAtoB: [UInt8] = [], initialBytesBtoA: [UInt8] = [], tuneSockets: Bool = false) {
        if tuneSockets {
            SocketOptions.tuneForRelay(a)
            SocketOptions.tuneForRelay(b)
        }
        self.a = a
        self.b = b
        self.loop = loop
        self.pipes = pipes
        self.aToB = Direction(from: a, to: b, isAtoB: true, unsent: initialBytesAtoB)
        self.bToA = Direction(from: b, to: a, isAtoB: false, unsent: initialBytesBtoA)
        self.lastActivity = monotonicNanos()
    }

    public var bytesAtoB: UInt64 { aToB.bytes }

    /// Monotonic nanoseconds since which a direction has had bytes waiting for a receiver
    /// that took none of them (the earlier of the two); nil while every queued byte moves.
    /// A peer that stops reading holds the relay's socket and pipe buffers: the owner ends
    /// the relay once this is older than its stall timeout.
    public var stalledSince: UInt64? {
        func blocked(_ direction: Direction) -> UInt64? {
            direction.waitingWritable && direction.blockedSince != 0 ? direction.blockedSince : nil
        }
        return earliest(blocked(aToB), blocked(bToA))
    }
    public var bytesBtoA: UInt64 { bToA.bytes }

    /// Starts relaying; call on the loop. `completion` runs once on the loop when both
    /// sockets are done.
    ///
    /// `readAFirst`: read side A at once instead of waiting for epoll to report it, for a
    /// caller that expects A to have spoken already (a static forward's client, whose
    /// request arrived while the upstream connected and the open row committed): one loop
    /// pass less per tunnel, or one `recv` wasted when A has not.
    ///
    /// `released` runs after `completion`, once both descriptors are closed: at once, or when
    /// a side that lingers (see `end`) is done, up to `LingeringClose.deadline` later.
    public func start(readAFirst: Bool = false, completion: @escaping (SpliceResult) -> Void,
                      released: (() -> Void)? = nil) {
        loop.preconditionInLoop()
        self.completion = completion
        self.released = released
        let registrationA = loop.register(a)
        let registrationB = loop.register(b)
        registrationA.onReadable = { [unowned self] in pump(aToB) }
        registrationA.onWritable = { [unowned self] in becameWritable(bToA) }
        registrationB.onReadable = { [unowned self] in pump(bToA) }
        registrationB.onWritable = { [unowned self] in becameWritable(aToB) }
        // A side that wants neither to be read nor written (its stream finished, or held back
        // by a full receiver) is still watched for a reset.
        registrationA.onFailure = { [unowned self] in endAfterFailure(of: aToB, as: .resetByA) }
        registrationB.onFailure = { [unowned self] in endAfterFailure(of: bToA, as: .resetByB) }
        self.registrationA = registrationA
        self.registrationB = registrationB
        // Initial bytes go out now, not when the other side first speaks.
        for direction in [aToB, bToA] where !direction.unsent.isEmpty || (readAFirst && direction === aToB) {
            pump(direction)
        }
        updateInterest()
    }

    /// Ends the relay now: both sockets reset, completion with `.aborted`. The relay cuts
    /// the stream (idle or stall timeout, the drain deadline), so neither peer may see an
    /// orderly close that could pass for its end. Call on the loop.
    public func abort() {
        loop.preconditionInLoop()
        end(.aborted)
    }

    // MARK: Moving bytes

    private func pump(_ direction: Direction) {
        guard !ended, !direction.finished else { return }
        lastActivity = monotonicNanos()
        if direction.discards { return discard(direction) }
        guard writeUnsent(direction) else { return updateInterest() }
        var rounds = 0
        while !ended {
            if direction.inPipe > 0, let pipe = direction.pipe {
                let sent = crelay_splice(pipe.readFD, direction.to, direction.inPipe, 0)
                if sent > 0 {
                    direction.inPipe -= sent
                    direction.bytes += UInt64(sent)
                    direction.blockedSince = 0
                    continue
                }
                if sent < 0 && errno == EINTR { continue }
                if sent < 0 && errno == EAGAIN {
                    waitUntilWritable(direction)
                    return updateInterest()
                }
                return failWrite(direction, errno: sent < 0 ? errno : EPIPE)
            }
            if direction.sawEOF {
                return finish(direction)
            }
            if direction.drained {
                // Level-triggered epoll reports the socket again if anything is left.
                direction.drained = false
                returnPipe(direction)
                direction.reading = true
                return updateInterest()
            }
            rounds += 1
            if rounds > Self.roundsPerEvent {
                returnPipe(direction)
                return updateInterest()
            }
            if direction.copiesReads {
                guard copyOnce(direction) else { return updateInterest() }
                continue
            }
            if direction.pipe == nil {
                do {
                    direction.pipe = try pipes.take()
                } catch {
                    return end(.error(error))
                }
            }
            guard let pipe = direction.pipe else { return }
            let received = crelay_splice(direction.from, pipe.writeFD, pipe.capacity, 1)
            if received > 0 {
                direction.inPipe += received
                direction.drained = received < pipe.capacity
                continue
            }
            if received == 0 {
                direction.sawEOF = true
                continue
            }
            switch errno {
            case EINTR:
                continue
            case EAGAIN:
                // Nothing to read: an idle direction gives its (empty) pipe back.
                returnPipe(direction)
                direction.reading = true
                return updateInterest()
            default:
                let code = errno
                return end(direction.isAtoB ? .resetByA : .resetByB, cause: code)
            }
        }
    }

    /// One recv into the copy buffer and its send on, with the pipe empty. True to keep
    /// pumping (bytes moved, EOF seen); false when the pump must wait (nothing to read, the
    /// receiver is full) or the relay ended.
    private func copyOnce(_ direction: Direction) -> Bool {
        let buffer = pipes.copyBuffer
        let received = recv(direction.from, buffer.baseAddress, buffer.count, 0)
        if received == 0 {
            direction.sawEOF = true
            return true
        }
        if received < 0 {
            switch errno {
            case EINTR:
                return true
            case EAGAIN:
                direction.reading = true
            default:
                let code = errno
                end(direction.isAtoB ? .resetByA : .resetByB, cause: code)
            }
            return false
        }
        if received == buffer.count {
            direction.copiesReads = false
        } else {
            direction.drained = true
        }
        var sent = 0
        while sent < received {
            let count = crelay_send_nosignal(direction.to, buffer.baseAddress! + sent, received - sent)
            if count > 0 {
                // Counted as it goes: a reset after a partial send still reports what went out.
                sent += count
                direction.bytes += UInt64(count)
                direction.blockedSince = 0
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && errno == EAGAIN { break }
            failWrite(direction, errno: count < 0 ? errno : EPIPE)
            return false
        }
        guard sent < received else { return true }
        // The receiver is full: keep the rest (less than one copy buffer) for when it is
        // writable again, and read nothing more until then.
        direction.unsent = Array(buffer[sent..<received])
        direction.unsentOffset = 0
        waitUntilWritable(direction)
        return false
    }

    /// Reads and drops what `direction.from` sends while the other direction delivers; its
    /// EOF stops the reading, its error (a reset) ends the relay as that side's reset.
    private func discard(_ direction: Direction) {
        let buffer = pipes.copyBuffer
        for _ in 0..<Self.roundsPerEvent {
            let received = recv(direction.from, buffer.baseAddress, buffer.count, 0)
            if received > 0 { continue }
            if received == 0 {
                direction.reading = false
                return updateInterest()
            }
            switch errno {
            case EINTR:
                continue
            case EAGAIN:
                return updateInterest()
            default:
                let code = errno
                return end(direction.isAtoB ? .resetByA : .resetByB, cause: code)
            }
        }
    }

    /// Writes the unsent bytes first; false while they are not all out.
    private func writeUnsent(_ direction: Direction) -> Bool {
        while direction.unsentOffset < direction.unsent.count {
            let sent = direction.unsent.withUnsafeBytes { bytes in
                crelay_send_nosignal(direction.to, bytes.baseAddress! + direction.unsentOffset,
                                     bytes.count - direction.unsentOffset)
            }
            if sent > 0 {
                direction.unsentOffset += sent
                direction.bytes += UInt64(sent)
                direction.blockedSince = 0
                continue
            }
            if sent < 0 && errno == EINTR { continue }
            if sent < 0 && errno == EAGAIN {
                waitUntilWritable(direction)
                return false
            }
            failWrite(direction, errno: sent < 0 ? errno : EPIPE)
            return false
        }
        if !direction.unsent.isEmpty {
            direction.unsent = []
            direction.unsentOffset = 0
        }
        return true
    }

    private func waitUntilWritable(_ direction: Direction) {
        direction.reading = false
        direction.waitingWritable = true
        if direction.blockedSince == 0 { direction.blockedSince = monotonicNanos() }
    }

    private func becameWritable(_ direction: Direction) {
        direction.waitingWritable = false
        direction.reading = true
        pump(direction)
        updateInterest()
    }

    /// Watches exactly what can make progress: each fd is read for one direction and
    /// written for the other.
    private func updateInterest() {
        guard !ended else { return }
        registrationA?.setInterest(read: aToB.reading && !aToB.finished, write: bToA.waitingWritable)
        registrationB?.setInterest(read: bToA.reading && !bToA.finished, write: aToB.waitingWritable)
    }

    private func returnPipe(_ direction: Direction) {
        if let pipe = direction.pipe, direction.inPipe == 0 {
            pipes.give(pipe)
            direction.pipe = nil
        }
    }

    // MARK: Endings

    /// One direction delivered everything up to its EOF: pass the EOF on.
    private func finish(_ direction: Direction) {
        direction.finished = true
        returnPipe(direction)
        if direction.failedWhileHeld {
            // A reset after the FIN (a read returns EOF, not the error, once FIN came).
            return end(direction.isAtoB ? .resetByA : .resetByB, cause: ECONNRESET)
        }
        if let (ending, cause) = endAfterDelivery {
            // What the side that reset had sent is delivered: the other side gets it whole,
            // then a FIN (it lingers, see `end`).
            end(ending, cause: cause)
        } else if aToB.finished && bToA.finished {
            // Both ways are done: the close right after sends the FIN anyway.
            end(.bothClosed)
        } else {
            _ = shutdown(direction.to, Int32(SHUT_WR))
            updateInterest()
        }
    }

    /// A socket watched only for failures reported one (a reset). If its own stream had
    /// ended in order the relay ends now (see `end` for how the other side is closed). A side
    /// still delivering is left to the read path, which meets the error after its last
    /// bytes, or to `finish` if a FIN came first. True when it ended.
    private func endAfterFailure(of incoming: Direction, as reason: SpliceResult.End) -> Bool {
        guard incoming.finished else {
            incoming.failedWhileHeld = true
            return false
        }
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(incoming.from, SOL_SOCKET, SO_ERROR, &code, &length)
        end(reason, cause: code == 0 ? ECONNRESET : code)
        return true
    }

    /// The receiving side refused bytes: it is gone. EPIPE says it had closed in order first
    /// (Linux reports a reset that comes after the peer's FIN as EPIPE, one in mid-stream as
    /// ECONNRESET): a server that replied and closed resets the request bytes that come
    /// after, and what it sent may still be on its way, so its own direction goes on to its
    /// end first. A reset in mid-stream ends the relay at once.
    private func failWrite(_ direction: Direction, errno code: Int32) {
        let reset: SpliceResult.End = direction.isAtoB ? .resetByB : .resetByA
        let incoming = direction.isAtoB ? bToA : aToB
        guard code == EPIPE, !incoming.finished, endAfterDelivery == nil else { return end(reset, cause: code) }
        deliverBeforeEnding(incoming, dropping: direction, as: reset, cause: code)
    }

    private func end(_ end: SpliceResult.End, cause: Int32 = 0) {
        guard !ended else { return }
        ended = true
        // A reset is passed on as a reset, unless the side that reset had already ended its
        // own stream in order: everything it sent was handed on, and a peer that closed
        // answers a late write with a reset, which must not cost the other side the end of
        // what it is being sent. That side lingers instead (`LingeringClose`): FIN after
        // what is queued, its further bytes read and dropped, so the close stays a close.
        switch end {
        case .resetByA where cause == ECONNRESET || cause == EPIPE:
            if !aToB.finished { SocketOptions.setLinger0(b) } else { return finishEnded(end, lingering: b) }
        case .resetByB where cause == ECONNRESET || cause == EPIPE:
            if !bToA.finished { SocketOptions.setLinger0(a) } else { return finishEnded(end, lingering: a) }
        case .resetByA, .resetByB:
            // Not a reset (EIO, ETIMEDOUT...): still one side failed; report it as an error,
            // and cut the other side.
            resetBoth()
            return finishEnded(.error(IOError("splice", errno: cause)))
        case .aborted, .error:
            resetBoth()
        case .bothClosed:
            break
        }
        finishEnded(end)
    }

    /// The side `delivering` reads from refused bytes after its FIN (a reset): `dropping`,
    /// the direction towards it, writes no more; what its sender sends is read and dropped
    /// (`discard`), so a client that writes before it reads is not left blocked. What the
    /// side that reset had sent is delivered to its FIN; then the relay ends as `end` and
    /// the other side gets a FIN after the whole reply, not a reset that would cost a slow
    /// reader its end. A read that meets the reset instead ends the relay with a reset then.
    private func deliverBeforeEnding(_ delivering: Direction, dropping: Direction, as end: SpliceResult.End,
                                     cause: Int32) {
        endAfterDelivery = (end, cause)
        dropping.discards = true
        dropping.reading = true
        dropping.waitingWritable = false
        dropping.unsent = []
        dropping.unsentOffset = 0
        if let pipe = dropping.pipe {
            pipes.discard(pipe)
            dropping.pipe = nil
            dropping.inPipe = 0
        }
        updateInterest()
    }

    /// The relay itself cuts the stream (`abort`, a failure that is not the peer's reset):
    /// both sides see a reset, never a FIN that could pass for the stream's end.
    private func resetBoth() {
        SocketOptions.setLinger0(a)
        SocketOptions.setLinger0(b)
    }

    /// Releases everything and reports `end`; `lingering` (a or b) is handed to a
    /// `LingeringClose` instead of being closed at once.
    private func finishEnded(_ end: SpliceResult.End, lingering: Int32? = nil) {
        ended = true
        for direction in [aToB, bToA] {
            if let pipe = direction.pipe {
                if direction.inPipe == 0 { pipes.give(pipe) } else { pipes.discard(pipe) }
                direction.pipe = nil
            }
        }
        registrationA?.deregister(fdClosing: lingering != a)
        registrationB?.deregister(fdClosing: lingering != b)
        registrationA = nil
        registrationB = nil
        let released = self.released
        self.released = nil
        var closer: LingeringClose?
        for fd in [a, b] {
            if fd == lingering { closer = LingeringClose.start(fd, on: loop, pipes: pipes, closed: released) } else { close(fd) }
        }
        let result = SpliceResult(bytesAtoB: aToB.bytes, bytesBtoA: bToA.bytes, end: end)
        let completion = self.completion
        self.completion = nil
        completion?(result)
        if closer == nil { released?() }
    }
}
