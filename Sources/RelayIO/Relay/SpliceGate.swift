/// An owner's judge of a `SplicePump`'s first bytes, for a relay that may have to be read in
/// user space before it may carry anything (a tunnel whose TLS handshake is inspected) but
/// most often may not (its client does not speak TLS): the pump relays at its usual cost
/// once the judge lets it, and gives its sockets back untouched by the judged read otherwise.
///
/// The judge sees the first copied read of each direction, or that direction's end of
/// stream, before any of it is sent on. `.relay` drops the gate for both directions;
/// `.handOver` stops the pump at once (nothing of that read is sent, no descriptor closed)
/// and passes a `SpliceHandOver` to `handedOver`. A reset while gated ends the relay as
/// any reset does: there is nothing to judge.
///
/// Both closures run on the pump's loop, from inside its event handling; `handedOver` may
/// register the descriptors again at once.
public struct SpliceGate {
    /// Which side a judged read came from.
    public enum Side: Sendable {
        case a
        case b
    }

    /// What a side sent first.
    public enum Read {
        /// The bytes of the side's first read, valid only during the call.
        case bytes(UnsafeRawBufferPointer)
        /// The side ended its stream before sending anything.
        case endOfStream
    }

    /// What the pump does with a judged read.
    public enum Verdict: Sendable {
        /// Send it on and relay from now on without asking again.
        case relay
        /// Stop and give the descriptors back (see `SpliceHandOver`).
        case handOver
    }

    let judge: (Side, Read) -> Verdict
    let handedOver: (SpliceHandOver) -> Void

    /// `judge` decides on each direction's first read until it answers `.relay`;
    /// `handedOver` receives the sockets after a `.handOver`.
    public init(judge: @escaping (Side, Read) -> Verdict, handedOver: @escaping (SpliceHandOver) -> Void) {
        self.judge = judge
        self.handedOver = handedOver
    }
}

/// What a gated `SplicePump` gives back when its judge asks for a hand-over: both sockets,
/// open and connected, their epoll entries left armed for a registration on the same loop
/// before it next waits (as `IORegistration.deregisterHandingOver` leaves them), and the
/// bytes that are now the new owner's to deliver. The pump has sent nothing it read; it
/// may have sent part of its initial bytes, the rest of which is owed. A side whose end of
/// stream was judged still reads as ended.
public struct SpliceHandOver {
    public let a: Int32
    public let b: Int32
    /// What the pump read from A (B) and did not send on: the judged read, or nothing.
    public let readFromA: [UInt8]
    public let readFromB: [UInt8]
    /// The part of the initial bytes for A (B) that A (B) had not taken yet.
    public let owedToA: [UInt8]
    public let owedToB: [UInt8]
}
