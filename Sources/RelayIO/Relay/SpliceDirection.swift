/// One direction of a `SplicePump`: bytes read from `from` and written to `to`, and what
/// it is doing now, as one `Mode`. Loop-confined, part of its pump.
final class SpliceDirection {
    /// What the direction is doing.
    enum Mode {
        /// Nothing queued: waits for `from` to be readable.
        case reading
        /// Bytes wait for `to` before anything more is read: the caller's initial bytes, the
        /// part of a copied read the receiver did not take, or a pipe's contents. At rest
        /// (between events) this means `to` is full and watched for writability;
        /// `stalledSince` is when it last refused them without taking a byte since (see
        /// `SplicePump.stalledSince`), nil before it first refused any.
        case writing(Queued, stalledSince: UInt64?, then: AfterQueued)
        /// Its receiver is gone (see `SplicePump.deliverBeforeEnding`): what `from` sends is read and
        /// dropped, so a sender that writes before it reads is not left blocked, and the
        /// relay ends as `ending` once the other direction has delivered everything.
        case discarding(Ending)
        /// Discarding, and `from` has ended its stream: nothing more to read.
        case discardedToEOF(Ending)
        /// `from`'s EOF was passed on to `to` as a shutdown.
        case finished
    }

    /// Bytes read and not yet written.
    enum Queued {
        /// Copied bytes from `offset` on (at most one copy buffer, or the initial bytes).
        case copied([UInt8], offset: Int)
        /// `count` bytes in a pipe borrowed from the pool: a direction holds a pipe only
        /// while bytes are in it.
        case piped(SplicePipe, count: Int)
    }

    /// What a direction does once what it queued is written.
    enum AfterQueued {
        /// Read `from` again: the last read filled what it read into, so more may wait.
        case readAgain
        /// Wait for `from` to be readable: the last read took less than it could, so the
        /// socket is most likely drained (level-triggered epoll reports it if not).
        case awaitReadable
    }

    /// How the relay ends once the direction still delivering is done.
    struct Ending {
        let end: SpliceResult.End
        let cause: Int32
    }

    /// How a direction reads: it copies through the loop's buffer until one read fills it
    /// (see `SplicePump`), then splices for good.
    enum ReadMethod {
        case copy
        case splice
    }

    let from: Int32
    let to: Int32
    let isAtoB: Bool
    @exclusivity(unchecked) var mode: Mode
    @exclusivity(unchecked) var method = ReadMethod.copy
    @exclusivity(unchecked) var bytes: UInt64 = 0
    /// `from` reported an error while this direction was not reading it: its entry left
    /// epoll, so the error is acted on when the direction finishes, if no read met it.
    @exclusivity(unchecked) var failedWhileHeld = false

    init(from: Int32, to: Int32, isAtoB: Bool, initialBytes: [UInt8]) {
        self.from = from
        self.to = to
        self.isAtoB = isAtoB
        mode = initialBytes.isEmpty ? .reading
            : .writing(.copied(initialBytes, offset: 0), stalledSince: nil, then: .readAgain)
    }

    /// A reset of the side this direction reads from.
    var resetOfSender: SpliceResult.End { isAtoB ? .resetByA : .resetByB }
    /// A reset of the side this direction writes to.
    var resetOfReceiver: SpliceResult.End { isAtoB ? .resetByB : .resetByA }

    var wantsReadable: Bool {
        switch mode {
        case .reading, .discarding: true
        case .writing, .discardedToEOF, .finished: false
        }
    }

    var isWriting: Bool {
        if case .writing = mode { true } else { false }
    }

    var isFinished: Bool {
        if case .finished = mode { true } else { false }
    }

    /// Set while this direction discards: how the relay ends after the other delivers.
    var ending: Ending? {
        switch mode {
        case .discarding(let ending), .discardedToEOF(let ending): ending
        case .reading, .writing, .finished: nil
        }
    }

    /// Copied bytes still queued (from their offset on), else none.
    var unsentCopied: [UInt8] {
        if case .writing(.copied(let bytes, let offset), _, _) = mode { Array(bytes[offset...]) } else { [] }
    }

    var stalledSince: UInt64? {
        if case .writing(_, let since, _) = mode { since } else { nil }
    }
}
