/// The fatal alerts the relay sends a tunnel's client when it ends the tunnel's TLS handshake
/// (RFC 8446 §6), so the client's TLS stack reports a reason rather than a bare close.
public enum TLSAlert: UInt8, Sendable, Equatable {
    case unexpectedMessage = 10
    case handshakeFailure = 40
    case illegalParameter = 47
    case decodeError = 50
    case protocolVersion = 70
    case unrecognizedName = 112

    /// The alert as one plaintext record: level fatal (2). The record version is always
    /// 0x0303: TLS 1.3 fixes it there for every record, and clients of older versions accept
    /// it on an alert that ends the handshake before any version was agreed.
    public var record: [UInt8] {
        [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, rawValue]
    }
}
