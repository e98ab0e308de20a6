/// What the relay does next for a tunnel under TLS inspection, in the order given.
public enum TLSInspectorAction: Equatable, Sendable {
    /// Client bytes that have been judged: write them to the server now.
    case toServer([UInt8])
    /// Server bytes that have been judged: write them to the client now.
    case toClient([UInt8])
    /// The inspection timeout (`TLSInspectionSettings.timeout`) starts now; report its expiry
    /// with `timedOut()`.
    case startTimer
    /// Decided and allowed. Every held byte was emitted by an earlier action; stop the timer
    /// and relay the tunnel raw (splice) from now on, without calling the inspector again.
    case finished
    /// End the tunnel: write `alert` to the client when there is one, then close both sides.
    /// Nothing still held is forwarded (bytes an earlier action in the same answer forwarded
    /// had been judged: an accepted ClientHello before a refused ServerHello).
    case refuse(ReasonCode, detail: String, alert: [UInt8]?)
}
