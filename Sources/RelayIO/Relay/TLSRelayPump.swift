import Glibc

/// Relay between two connected sides of which one or both speak TLS (`TLSRelaySide`):
/// cleartext is copied in userspace through pooled 64 KiB buffers, one per direction while its
/// bytes move and none while it waits for its sender (splice cannot see inside TLS, and this
/// kernel offers no kernel TLS). The contract is
/// `SplicePump`'s: full duplex; half-close (one side's end of stream, close_notify from a
/// TLS side or a FIN from a plain one, is passed on as the other side's write shutdown,
/// close_notify then FIN for TLS, while the other direction keeps flowing); backpressure (a
/// direction whose receiver is full reads nothing more until it drains, so at most one
/// buffer is in flight each way);
/// bounded rounds per event; byte counts each way; one completion with a `SpliceResult`.
///
/// Unlike `SplicePump` a failure on either side (a reset, a TLS error) ends the relay at
/// once with both sides reset: a TLS stream cut mid-record has no "deliver the rest" to
/// offer. So does a TLS side's bare FIN without close_notify: it may be an attacker's or a
/// middlebox's cut, and a FIN passed to a plain peer would let a stream whose end is its
/// framing (a close-delimited body, a raw protocol) pass for complete. The peer gets a reset,
/// the result says `truncatedByA`/`truncatedByB`.
///
/// A TLS read may need the socket writable and a write readable (OpenSSL flushing or
/// reading a record of its own), so each direction records what it waits for on which
/// side, and the registrations watch exactly that. OpenSSL may hold decrypted bytes the
/// socket no longer signals: a pass that stops on its round budget runs again before the
/// loop waits.
///
/// Loop-confined: made anywhere, then touched only on `loop`'s thread.
public final class TLSRelayPump {
    /// Rounds (a read or a write) per direction per pass before yielding to the loop.
    private static let roundsPerPass = 32

    private final class Direction {
        let from: TLSRelaySide
        let to: TLSRelaySide
        let fromIsA: Bool
        /// Lent by the pool while bytes move this way; nil while the sender is quiet.
        var buffer: UnsafeMutableRawBufferPointer?
        /// The sender's end or failure, met while filling the buffer: the next read's outcome.
        var heldOutcome: TLSRelaySide.Outcome?
        /// Bytes owed to the receiver before anything read (the `200`, judged handshake
        /// bytes), and how many of them went out.
        var initial: [UInt8]
        var initialSent = 0
        var start = 0
        var end = 0
        var bytes: UInt64 = 0
        var finished = false
        /// The sender ended and everything it sent is delivered; the end itself (close_notify,
        /// then FIN) waits for the receiver's socket to take it.
        var closing = false
        /// What the last step waited for: the descriptor (of `from` or `to`) and how.
        var waiting: (fd: Int32, on: TLSRelaySide.Wait)?
        var stalledSince: UInt64?

        init(from: TLSRelaySide, to: TLSRelaySide, fromIsA: Bool, initial: [UInt8]) {
            self.from = from
            self.to = to
            self.fromIsA = fromIsA
            self.initial = initial
        }
    }

    private enum Phase {
        case ready
        case relaying(IORegistration, IORegistration, (SpliceResult) -> Void)
        case ended
    }

    private let a: TLSRelaySide
    private let b: TLSRelaySide
    private let loop: EventLoop
    private let buffers: RelayBufferPool
    private let aToB: Direction
    private let bToA: Direction
    private var phase = Phase.ready
    private var passScheduled = false
    /// Monotonic nanoseconds of the last pass that moved bytes (for idle sweeps).
    public private(set) var lastActivity: UInt64

    /// Takes ownership of both sides (their descriptors and TLS state). `initialBytesAtoB`
    /// and `initialBytesBtoA` are written before anything relayed, as `SplicePump`'s are
    /// (through TLS on a TLS side), and counted with the bytes written.
    public init(a: TLSRelaySide, b: TLSRelaySide, loop: EventLoop, buffers: RelayBufferPool,
                initialBytesAtoB: [UInt8] = [], initialBytesBtoA: [UInt8] = []) {
        self.a = a
        self.b = b
        self.loop = loop
        self.buffers = buffers
        aToB = Direction(from: a, to: b, fromIsA: true, initial: initialBytesAtoB)
        bToA = Direction(from: b, to: a, fromIsA: false, initial: initialBytesBtoA)
        lastActivity = monotonicNanos()
    }

    /// Cleartext bytes written to B so far.
    public var bytesAtoB: UInt64 { aToB.bytes }
    /// Cleartext bytes written to A so far.
    public var bytesBtoA: UInt64 { bToA.bytes }

    /// Since when a direction's receiver has taken none of its waiting bytes (the earlier
    /// of the two), nil while bytes move.
    public var stalledSince: UInt64? {
        earliest(aToB.stalledSince, bToA.stalledSince)
    }

    /// Starts relaying; call on the loop, once. `completion` runs once, on the loop, after
    /// both sides are closed.
    public func start(completion: @escaping (SpliceResult) -> Void) {
        loop.preconditionInLoop()
        guard case .ready = phase else { preconditionFailure("a TLS relay starts once, before it is aborted") }
        let registrationA = loop.register(a.fd)
        let registrationB = loop.register(b.fd)
        for registration in [registrationA, registrationB] {
            registration.onReadable = { [unowned self] in pass() }
            registration.onWritable = { [unowned self] in pass() }
        }
        phase = .relaying(registrationA, registrationB, completion)
        pass()
    }

    /// Ends the relay now: both sides reset, completion with `.aborted`. Call on the loop.
    public func abort() {
        loop.preconditionInLoop()
        if case .ready = phase {
            a.close()
            b.close()
            phase = .ended
            return
        }
        end(.aborted)
    }

    private var isRelaying: Bool {
        if case .relaying = phase { true } else { false }
    }

    /// Moves what both directions can move now, then watches what they wait for.
    private func pass() {
        passScheduled = false
        guard isRelaying else { return }
        let budgetSpent = [aToB, bToA].map(run).contains(true)
        guard isRelaying else { return }
        if budgetSpent && !passScheduled {
            // After the loop's next poll, not before it: work added before a wait runs in the
            // same cycle, so a tunnel whose peers keep up would never let the loop wait, and
            // every other connection and timer on it would starve.
            passScheduled = true
            let pump = LoopBound(self, on: loop)
            loop.execute { pump.value.pass() }
        }
        updateInterest()
    }

    /// Steps `direction` until it waits, finishes or spends its budget; true when the budget
    /// ran out with work possibly left.
    private func run(_ direction: Direction) -> Bool {
        direction.waiting = nil
        for _ in 0..<Self.roundsPerPass {
            guard isRelaying, !direction.finished, step(direction) else { return false }
            lastActivity = monotonicNanos()
        }
        return true
    }

    /// One read or one write; true when it moved bytes or ended the stream.
    private func step(_ direction: Direction) -> Bool {
        if direction.closing {
            passEnd(direction)
            return false
        }
        if direction.initialSent < direction.initial.count {
            let sent = direction.initialSent
            guard let count = direction.initial.withUnsafeBytes({ deliver(UnsafeRawBufferPointer(rebasing: $0[sent...]), direction) })
            else { return false }
            direction.initialSent += count
            if direction.initialSent == direction.initial.count { direction.initial = []; direction.initialSent = 0 }
            return true
        }
        if let buffer = direction.buffer, direction.start < direction.end {
            guard let count = deliver(UnsafeRawBufferPointer(rebasing: buffer[direction.start..<direction.end]), direction)
            else { return false }
            direction.start += count
            if direction.start == direction.end { direction.start = 0; direction.end = 0 }
            return true
        }
        let buffer = direction.buffer ?? buffers.take()
        direction.buffer = buffer
        let first = direction.heldOutcome ?? direction.from.read(into: buffer)
        direction.heldOutcome = nil
        if case .moved(let count) = first {
            // Fill the buffer before writing: a TLS read returns one record (16 KiB at most),
            // and one write of several costs the receiver's side a fraction of the calls.
            direction.end = count
            while direction.end < buffer.count {
                let next = direction.from.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[direction.end...]))
                switch next {
                case .moved(let more):
                    direction.end += more
                    continue
                case .wait:
                    break
                case .ended, .failed:
                    // An end or an error is said once (a reset socket reads as an end after),
                    // so it waits for its turn behind the bytes read before it.
                    direction.heldOutcome = next
                }
                break
            }
            return true
        }
        // Nothing in flight this way: the buffer goes back to the pool while the sender is
        // quiet, so an idle relay holds none.
        direction.buffer = nil
        buffers.give(buffer)
        switch first {
        case .moved:
            preconditionFailure("handled above")
        case .wait(let wait):
            direction.waiting = (direction.from.fd, wait)
            return false
        case .ended(orderly: true):
            finish(direction)
            return true
        case .ended(orderly: false):
            end(direction.fromIsA ? .truncatedByA : .truncatedByB)
            return false
        case .failed(let code, _):
            end(direction.fromIsA ? .resetByA : .resetByB, cause: code)
            return false
        }
    }

    /// Writes `pending` to `direction`'s receiver: the count taken, or nil when it waits for
    /// the socket, ended, or failed (and the relay ended).
    private func deliver(_ pending: UnsafeRawBufferPointer, _ direction: Direction) -> Int? {
        switch direction.to.write(pending) {
        case .moved(let count):
            direction.bytes += UInt64(count)
            direction.stalledSince = nil
            return count
        case .wait(let wait):
            direction.waiting = (direction.to.fd, wait)
            if direction.stalledSince == nil { direction.stalledSince = monotonicNanos() }
            return nil
        case .ended:
            return nil
        case .failed(let code, _):
            end(direction.fromIsA ? .resetByB : .resetByA, cause: code)
            return nil
        }
    }

    /// `direction` delivered everything up to its sender's end: pass the end on.
    private func finish(_ direction: Direction) {
        direction.closing = true
        passEnd(direction)
    }

    /// Sends the end on, or waits for the receiver's socket to take it.
    private func passEnd(_ direction: Direction) {
        guard direction.to.shutdownWrite() else {
            direction.waiting = (direction.to.fd, .writable)
            return
        }
        direction.closing = false
        direction.finished = true
        if aToB.finished && bToA.finished { end(.bothClosed) }
    }

    private func updateInterest() {
        guard case .relaying(let registrationA, let registrationB, _) = phase else { return }
        for registration in [registrationA, registrationB] {
            var read = false
            var write = false
            for direction in [aToB, bToA] {
                guard let waiting = direction.waiting, waiting.fd == registration.fd else { continue }
                switch waiting.on {
                case .readable: read = true
                case .writable: write = true
                }
            }
            registration.setInterest(read: read, write: write)
        }
    }

    private func end(_ end: SpliceResult.End, cause: Int32 = 0) {
        guard case .relaying(let registrationA, let registrationB, let completion) = phase else { return }
        phase = .ended
        registrationA.deregister(fdClosing: true)
        registrationB.deregister(fdClosing: true)
        if end != .bothClosed {
            SocketOptions.setLinger0(a.fd)
            SocketOptions.setLinger0(b.fd)
        }
        a.close()
        b.close()
        for direction in [aToB, bToA] {
            if let buffer = direction.buffer { buffers.give(buffer) }
            direction.buffer = nil
            direction.finished = true
        }
        let result: SpliceResult.End = switch end {
        case .resetByA, .resetByB: cause == ECONNRESET || cause == EPIPE ? end : .error(IOError("TLS relay", errno: cause))
        default: end
        }
        completion(SpliceResult(bytesAtoB: aToB.bytes, bytesBtoA: bToA.bytes, end: result))
    }
}
