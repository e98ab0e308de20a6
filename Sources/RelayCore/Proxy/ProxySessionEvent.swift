/// What the I/O driver reports to a `ProxySession`; which event may come in which state is
/// set out in `ProxySession+Events.swift`.
public enum ProxySessionEvent: Sendable {
    /// The client closed its sending side (or the connection).
    case clientEOF
    case resolved([IPAddress])
    case resolveFailed
    case upstreamConnected
    /// Connect failed; the reason is `.upstreamRefused`, `.upstreamUnreachable` or `.upstreamTimeout`.
    case upstreamConnectFailed(ReasonCode)
    case auditCommitted
    /// The audit trail could not commit the open record: nothing may be relayed.
    case auditFailed
    case upstreamEOF
    /// The upstream connection failed mid-exchange (reset, write error).
    case upstreamFailed
    case headerTimeout
    /// The answer to `.authenticate`.
    case authFinished(ProxyAuthOutcome)
    /// The client connection failed (reset, write error), went idle too long, or the server
    /// is stopping: audit what was in flight with this reason and close everything.
    case connectionLost(ReasonCode)
}
