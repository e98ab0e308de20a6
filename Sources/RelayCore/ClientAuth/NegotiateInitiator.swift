/// The initiator side of a Negotiate (RFC 4559) handshake, one per connection and target.
///
/// RelayCore stays free of GSS-API: the client library supplies an initiator backed by
/// `gss_init_sec_context`, tests may supply a scripted one. The session calls it one step
/// at a time, on one thread at a time.
public protocol NegotiateInitiator: AnyObject, Sendable {
    /// One step: nil for the first token, then each token the peer returned. Returns the
    /// token to send (empty when there is nothing more to send).
    func step(_ input: [UInt8]?) throws(ClientAuthError) -> [UInt8]
    /// True once the mechanism reports the context complete (mutual authentication done).
    var isComplete: Bool { get }
}

/// Which mechanism a Negotiate initiator puts its Kerberos token in.
public enum NegotiateMechanism: Sendable, Hashable, CaseIterable {
    /// SPNEGO (RFC 4178), what RFC 4559 specifies and most acceptors expect.
    case spnego
    /// A bare Kerberos v5 token, which some acceptors accept instead.
    case kerberos
}

/// Starts an initiator for `host` (the service is `HTTP@host`) with `mechanism`; throws
/// `no-credentials` or `negotiate-failed` when no usable ticket or mechanism is there.
public typealias NegotiateInitiatorFactory = @Sendable (_ host: String, _ mechanism: NegotiateMechanism) throws(ClientAuthError) -> any NegotiateInitiator
