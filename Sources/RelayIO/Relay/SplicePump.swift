import CRelayShims
import Glibc

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
///
/// A `SpliceGate` may hold the relay until its owner has judged the first read of each
/// direction (see there): bytes are copied first anyway, so judging them costs a call and
/// a gate that lets them through costs nothing after it.
///
/// Each direction is in one `SpliceDirection.Mode` at a time (reading, writing what is
/// queued, discarding, finished), and the relay in one `Phase`, so a direction cannot, say,
/// wait for its receiver and read at once.
///
/// Loop-confined: made anywhere, then touched only on `loop`'s thread, hence
/// `@exclusivity(unchecked)` on its state (see EventLoop).
public final class SplicePump {
    private typealias Direction = SpliceDirection
    private typealias Queued = SpliceDirection.Queued
    private typealias AfterQueued = SpliceDirection.AfterQueued
    private typealias Ending = SpliceDirection.Ending

    /// After this many rounds (copies or splices) in one event, yield so one fast stream
    /// cannot starve the other connections of the loop (the socket stays readable, so the
    /// event returns).
    private static let roundsPerEvent = 32

    /// The relay's registrations and callbacks, while it runs.
    private final class Relaying {
        let registrationA: IORegistration
        let registrationB: IORegistration
        let completion: (SpliceResult) -> Void
        let released: (() -> Void)?

        init(registrationA: IORegistration, registrationB: IORegistration,
             completion: @escaping (SpliceResult) -> Void, released: (() -> Void)?) {
            self.registrationA = registrationA
            self.registrationB = registrationB
            self.completion = completion
            self.released = released
        }

        /// Watches exactly what can make progress: each fd is read for one direction and
        /// written for the other. A method here rather than in the pump: called on the
        /// relaying's own reference, the registrations need no retain around each call.
        func watch(aToB: Direction, bToA: Direction) {
            registrationA.setInterest(read: aToB.wantsReadable, write: bToA.isWriting)
            registrationB.setInterest(read: bToA.wantsReadable, write: aToB.isWriting)
        }
    }

    private enum Phase {
        /// Made, not started: `abort()` closes both sockets.
        case ready
        case relaying(Relaying)
        /// Both sockets closed or handed to a `LingeringClose`, completion called; or both
        /// handed over to the gate's owner, completion never called.
        case ended
    }

    private let a: Int32
    private let b: Int32
    private let loop: EventLoop
    private let pipes: PipePool
    private let aToB: Direction
    private let bToA: Direction
    @exclusivity(unchecked) private var phase = Phase.ready
    /// Set from `start` until its judge lets the relay go or the pump stops.
    @exclusivity(unchecked) private var gate: SpliceGate?
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
        self.aToB = Direction(from: a, to: b, isAtoB: true, initialBytes: initialBytesAtoB)
        self.bToA = Direction(from: b, to: a, isAtoB: false, initialBytes: initialBytesBtoA)
        self.lastActivity = monotonicNanos()
    }

    /// Bytes written to B so far (initial bytes included).
    public var bytesAtoB: UInt64 { aToB.bytes }
    /// Bytes written to A so far (initial bytes included).
    public var bytesBtoA: UInt64 { bToA.bytes }

    /// Monotonic nanoseconds since which a direction has had bytes waiting for a receiver
    /// that took none of them (the earlier of the two); nil while every queued byte moves.
    /// A peer that stops reading holds the relay's socket and pipe buffers: the owner ends
    /// the relay once this is older than its stall timeout.
    public var stalledSince: UInt64? {
        earliest(aToB.stalledSince, bToA.stalledSince)
    }

    /// Starts relaying; call on the loop, once. `completion` runs once on the loop when
    /// both sockets are done.
    ///
    /// `readAFirst`: read side A at once instead of waiting for epoll to report it, for a
    /// caller that expects A to have spoken already (a static forward's client, whose
    /// request arrived while the upstream connected and the open row committed): one loop
    /// pass less per tunnel, or one `recv` wasted when A has not.
    ///
    /// `gate`: the owner judges each direction's first read before it is sent on, and may
    /// take the sockets back instead (see `SpliceGate`); then neither `completion` nor
    /// `released` runs.
    ///
    /// `released` runs after `completion`, once both descriptors are closed: at once, or when
    /// a side that lingers (see `end`) is done, up to `LingeringClose.deadline` later.
    public func start(readAFirst: Bool = false, gate: SpliceGate? = nil, completion: @escaping (SpliceResult) -> Void,
                      released: (() -> Void)? = nil) {
        loop.preconditionInLoop()
        guard case .ready = phase else { preconditionFailure("a splice relay starts once, before it is aborted") }
        self.gate = gate
        let registrationA = loop.register(a)
        let registrationB = loop.register(b)
        registrationA.onReadable = { [unowned self] in pump(aToB) }
        registrationA.onWritable = { [unowned self] in pump(bToA) }
        registrationB.onReadable = { [unowned self] in pump(bToA) }
        registrationB.onWritable = { [unowned self] in pump(aToB) }
        // A side that wants neither to be read nor written (its stream finished, or held back
        // by a full receiver) is still watched for a reset.
        registrationA.onFailure = { [unowned self] in endAfterFailure(of: aToB) }
        registrationB.onFailure = { [unowned self] in endAfterFailure(of: bToA) }
        phase = .relaying(Relaying(registrationA: registrationA, registrationB: registrationB,
                                   completion: completion, released: released))
        // Initial bytes go out now, not when the other side first speaks.
        for direction in [aToB, bToA] where direction.isWriting || (readAFirst && direction === aToB) {
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

    private var isRelaying: Bool {
        if case .relaying = phase { true } else { false }
    }

    private func other(_ direction: Direction) -> Direction {
        direction === aToB ? bToA : aToB
    }

    /// Moves what `direction` can move now: its queued bytes, then reads and their writes
    /// until a socket would block, the stream ends, or the round budget is spent. Runs when
    /// `from` is readable or `to` writable.
    private func pump(_ direction: Direction) {
        guard isRelaying else { return }
        switch direction.mode {
        case .finished, .discardedToEOF:
            return
        case .discarding(let ending):
            lastActivity = monotonicNanos()
            return discard(direction, ending: ending)
        case .reading, .writing:
            lastActivity = monotonicNanos()
        }
        var rounds = 0
        while isRelaying {
            switch direction.mode {
            case .writing(let queued, let stalledSince, let then):
                guard write(queued, of: direction, stalledSince: stalledSince, then: then) else { return updateInterest() }
                direction.mode = .reading
                if case .awaitReadable = then { return updateInterest() }
            case .reading:
                rounds += 1
                if rounds > Self.roundsPerEvent { return updateInterest() }
                guard read(direction) else { return updateInterest() }
            case .discarding, .discardedToEOF, .finished:
                return updateInterest()
            }
        }
    }

    /// One read from `from`, nothing being queued; true to keep pumping (bytes were read,
    /// or copied on whole and more may wait), false when the pump must wait or the stream
    /// ended (EOF passed on, or the relay ended).
    private func read(_ direction: Direction) -> Bool {
        switch direction.method {
        case .copy: copyOnce(direction)
        case .splice: spliceIn(direction)
        }
    }

    /// One recv into the copy buffer and its send on.
    private func copyOnce(_ direction: Direction) -> Bool {
        let buffer = pipes.copyBuffer
        let received: Int
        do throws(IOError) {
            switch try systemCall("recv", { recv(direction.from, buffer.baseAddress, buffer.count, 0) }) {
            case .processed(0):
                if gate != nil, !passesGate(direction, .endOfStream) { return false }
                finish(direction)
                return false
            case .processed(let count):
                received = count
            case .wouldBlock:
                return false
            }
        } catch {
            end(direction.resetOfSender, cause: error.errno)
            return false
        }
        if gate != nil, !passesGate(direction, .bytes(UnsafeRawBufferPointer(start: buffer.baseAddress, count: received))) {
            return false
        }
        let then: AfterQueued
        if received == buffer.count {
            direction.method = .splice
            then = .readAgain
        } else {
            then = .awaitReadable
        }
        var sent = 0
        sending: while sent < received {
            let outcome = Result { () throws(IOError) in
                try systemCall("send") { crelay_send_nosignal(direction.to, buffer.baseAddress! + sent, received - sent) }
            }
            switch outcome {
            case .success(.processed(let count)) where count > 0:
                // Counted as it goes: a reset after a partial send still reports what went out.
                sent += count
                direction.bytes += UInt64(count)
            case .success(.wouldBlock):
                break sending
            case .success(.processed):
                failWrite(direction, errno: EPIPE)
                return false
            case .failure(let error):
                failWrite(direction, errno: error.errno)
                return false
            }
        }
        guard sent < received else { return then == .readAgain }
        // The receiver is full: keep the rest (less than one copy buffer) for when it is
        // writable again, and read nothing more until then.
        direction.mode = .writing(.copied(Array(buffer[sent..<received]), offset: 0), stalledSince: monotonicNanos(),
                                  then: then)
        return false
    }

    /// Asks the gate about `direction`'s first read: true to send it on (the gate is gone),
    /// false once the sockets are handed over.
    private func passesGate(_ direction: Direction, _ read: SpliceGate.Read) -> Bool {
        guard let gate, case .relaying(let relaying) = phase else { return true }
        switch gate.judge(direction === aToB ? .a : .b, read) {
        case .relay:
            self.gate = nil
            return true
        case .handOver:
            self.gate = nil
            phase = .ended
            relaying.registrationA.deregisterHandingOver()
            relaying.registrationB.deregisterHandingOver()
            var judged: [UInt8] = []
            if case .bytes(let bytes) = read { judged = Array(bytes) }
            // While gated nothing was read but this, so only initial bytes can be queued.
            let handOver = SpliceHandOver(a: a, b: b, readFromA: direction === aToB ? judged : [],
                                          readFromB: direction === bToA ? judged : [],
                                          owedToA: bToA.unsentCopied, owedToB: aToB.unsentCopied)
            aToB.mode = .finished
            bToA.mode = .finished
            gate.handedOver(handOver)
            return false
        }
    }

    /// One splice from `from` into a pipe, whose bytes the pump writes on next.
    private func spliceIn(_ direction: Direction) -> Bool {
        let pipe: SplicePipe
        do throws(IOError) {
            pipe = try pipes.take()
        } catch {
            end(.error(error))
            return false
        }
        do throws(IOError) {
            switch try systemCall("splice", { crelay_splice(direction.from, pipe.writeFD, pipe.capacity, 1) }) {
            case .processed(0):
                pipes.give(pipe)
                finish(direction)
                return false
            case .processed(let count):
                direction.mode = .writing(.piped(pipe, count: count), stalledSince: nil,
                                          then: count < pipe.capacity ? .awaitReadable : .readAgain)
                return true
            case .wouldBlock:
                // Nothing to read: an idle direction holds no pipe.
                pipes.give(pipe)
                return false
            }
        } catch {
            pipes.give(pipe)
            end(direction.resetOfSender, cause: error.errno)
            return false
        }
    }

    /// Writes `queued` to `to`; true once all of it is out. Otherwise the direction's mode
    /// holds what is left (when `to` is full) or the relay has dealt with the failure.
    private func write(_ queued: Queued, of direction: Direction, stalledSince: UInt64?, then: AfterQueued) -> Bool {
        var stalledSince = stalledSince
        switch queued {
        case .copied(let bytes, var offset):
            while offset < bytes.count {
                let outcome = bytes.withUnsafeBytes { raw in
                    Result { () throws(IOError) in
                        try systemCall("send") { crelay_send_nosignal(direction.to, raw.baseAddress! + offset, raw.count - offset) }
                    }
                }
                if case .success(.processed(let sent)) = outcome, sent > 0 {
                    offset += sent
                    direction.bytes += UInt64(sent)
                    stalledSince = nil
                    continue
                }
                direction.mode = .writing(.copied(bytes, offset: offset), stalledSince: stalledSince ?? monotonicNanos(),
                                          then: then)
                return writeStopped(direction, outcome)
            }
            return true
        case .piped(let pipe, var count):
            while count > 0 {
                let outcome = Result { () throws(IOError) in
                    try systemCall("splice") { crelay_splice(pipe.readFD, direction.to, count, 0) }
                }
                if case .success(.processed(let sent)) = outcome, sent > 0 {
                    count -= sent
                    direction.bytes += UInt64(sent)
                    stalledSince = nil
                    continue
                }
                direction.mode = .writing(.piped(pipe, count: count), stalledSince: stalledSince ?? monotonicNanos(),
                                          then: then)
                return writeStopped(direction, outcome)
            }
            pipes.give(pipe)
            return true
        }
    }

    /// A write that moved nothing: false, after passing on a failure (a write of no bytes
    /// counts as EPIPE); the receiver being full leaves the direction writing.
    private func writeStopped(_ direction: Direction, _ outcome: Result<SystemCallResult<Int>, IOError>) -> Bool {
        switch outcome {
        case .success(.wouldBlock): break
        case .success(.processed): failWrite(direction, errno: EPIPE)
        case .failure(let error): failWrite(direction, errno: error.errno)
        }
        return false
    }

    /// Reads and drops what `direction.from` sends while the other direction delivers; its
    /// EOF stops the reading, its error (a reset) ends the relay as that side's reset.
    private func discard(_ direction: Direction, ending: Ending) {
        let buffer = pipes.copyBuffer
        for _ in 0..<Self.roundsPerEvent {
            do throws(IOError) {
                switch try systemCall("recv", { recv(direction.from, buffer.baseAddress, buffer.count, 0) }) {
                case .processed(0):
                    direction.mode = .discardedToEOF(ending)
                    return updateInterest()
                case .processed:
                    continue
                case .wouldBlock:
                    return updateInterest()
                }
            } catch {
                return end(direction.resetOfSender, cause: error.errno)
            }
        }
    }

    /// Watches what can make progress now (see `Relaying.watch`).
    private func updateInterest() {
        guard case .relaying(let relaying) = phase else { return }
        relaying.watch(aToB: aToB, bToA: bToA)
    }

    // MARK: Endings

    /// One direction delivered everything up to its EOF: pass the EOF on.
    private func finish(_ direction: Direction) {
        direction.mode = .finished
        if direction.failedWhileHeld {
            // A reset after the FIN (a read returns EOF, not the error, once FIN came).
            return end(direction.resetOfSender, cause: ECONNRESET)
        }
        let other = other(direction)
        if let ending = other.ending {
            // What the side that reset had sent is delivered: the other side gets it whole,
            // then a FIN (it lingers, see `end`).
            end(ending.end, cause: ending.cause)
        } else if other.isFinished {
            // Both ways are done: the close right after sends the FIN anyway.
            end(.bothClosed)
        } else {
            _ = shutdown(direction.to, Int32(SHUT_WR))
            updateInterest()
        }
    }

    /// A socket watched only for failures reported one (a reset); `incoming` reads from it.
    /// If its own stream had ended in order the relay ends now (see `end` for how the other
    /// side is closed). A side still delivering is left to the read path, which meets the
    /// error after its last bytes, or to `finish` if a FIN came first. True when it ended.
    private func endAfterFailure(of incoming: Direction) -> Bool {
        guard incoming.isFinished else {
            incoming.failedWhileHeld = true
            return false
        }
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(incoming.from, SOL_SOCKET, SO_ERROR, &code, &length)
        end(incoming.resetOfSender, cause: code == 0 ? ECONNRESET : code)
        return true
    }

    /// The receiving side refused bytes: it is gone. EPIPE says it had closed in order first
    /// (Linux reports a reset that comes after the peer's FIN as EPIPE, one in mid-stream as
    /// ECONNRESET): a server that replied and closed resets the request bytes that come
    /// after, and what it sent may still be on its way, so its own direction goes on to its
    /// end first. A reset in mid-stream ends the relay at once.
    private func failWrite(_ direction: Direction, errno code: Int32) {
        let incoming = other(direction)
        // While gated nothing judged has been relayed that a reply could be owed for: a
        // side that refuses its initial bytes ends the relay at once.
        guard gate == nil, code == EPIPE, !incoming.isFinished, incoming.ending == nil else {
            return end(direction.resetOfReceiver, cause: code)
        }
        deliverBeforeEnding(incoming, dropping: direction, as: Ending(end: direction.resetOfReceiver, cause: code))
    }

    private func end(_ end: SpliceResult.End, cause: Int32 = 0) {
        if case .ended = phase { return }
        // A reset is passed on as a reset, unless the side that reset had already ended its
        // own stream in order: everything it sent was handed on, and a peer that closed
        // answers a late write with a reset, which must not cost the other side the end of
        // what it is being sent. That side lingers instead (`LingeringClose`): FIN after
        // what is queued, its further bytes read and dropped, so the close stays a close.
        switch end {
        case .resetByA where cause == ECONNRESET || cause == EPIPE:
            if !aToB.isFinished { SocketOptions.setLinger0(b) } else { return finishEnded(end, lingering: b) }
        case .resetByB where cause == ECONNRESET || cause == EPIPE:
            if !bToA.isFinished { SocketOptions.setLinger0(a) } else { return finishEnded(end, lingering: a) }
        case .resetByA, .resetByB:
            // Not a reset (EIO, ETIMEDOUT...): still one side failed; report it as an error,
            // and cut the other side.
            resetBoth()
            return finishEnded(.error(IOError("splice", errno: cause)))
        case .aborted, .error, .truncatedByA, .truncatedByB:
            resetBoth()
        case .bothClosed:
            break
        }
        finishEnded(end)
    }

    /// The side `delivering` reads from refused bytes after its FIN (a reset): `dropping`,
    /// the direction towards it, writes no more; what its sender sends is read and dropped
    /// (`discard`), so a client that writes before it reads is not left blocked. What the
    /// side that reset had sent is delivered to its FIN; then the relay ends as `ending` and
    /// the other side gets a FIN after the whole reply, not a reset that would cost a slow
    /// reader its end. A read that meets the reset instead ends the relay with a reset then.
    private func deliverBeforeEnding(_ delivering: Direction, dropping: Direction, as ending: Ending) {
        if case .writing(.piped(let pipe, _), _, _) = dropping.mode {
            pipes.discard(pipe)
        }
        dropping.mode = .discarding(ending)
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
        let relaying: Relaying? = if case .relaying(let relaying) = phase { relaying } else { nil }
        phase = .ended
        gate = nil
        for direction in [aToB, bToA] {
            if case .writing(.piped(let pipe, _), _, _) = direction.mode {
                // Bytes no one will read: the pipe goes, not back to the pool.
                pipes.discard(pipe)
            }
            direction.mode = .finished
        }
        relaying?.registrationA.deregister(fdClosing: lingering != a)
        relaying?.registrationB.deregister(fdClosing: lingering != b)
        var closer: LingeringClose?
        for fd in [a, b] {
            if fd == lingering {
                closer = LingeringClose.start(fd, on: loop, pipes: pipes, closed: relaying?.released)
            } else {
                close(fd)
            }
        }
        relaying?.completion(SpliceResult(bytesAtoB: aToB.bytes, bytesBtoA: bToA.bytes, end: end))
        if closer == nil { relaying?.released?() }
    }
}
