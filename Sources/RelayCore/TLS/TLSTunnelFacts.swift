/// What the inspector read from a tunnel's handshake, for its audit row, whatever the outcome.
public struct TLSTunnelFacts: Equatable, Sendable {
    /// What the tunnel carries, as far as its first bytes tell.
    public enum Payload: String, Sendable, Equatable {
        /// Nothing classified yet (the tunnel ended or was refused first).
        case undecided
        /// The client opened with a TLS handshake record.
        case tls
        /// The client opened with something else, or the server spoke first.
        case cleartext
    }

    public var payload: Payload = .undecided
    /// The server name of the latest ClientHello: normalised when it is a valid host, else its
    /// bytes with anything unprintable as `\xNN`. With ECH this is the outer (public) name.
    public var sni: String?
    /// The ClientHello carried `encrypted_client_hello` (0xfe0d): `sni` is the outer name.
    public var ech = false
    /// The versions the latest ClientHello offered (ascending, GREASE and unknown codes left out).
    public var offeredVersions: [TLSVersion] = []
    /// The version the ServerHello (or a HelloRetryRequest) chose.
    public var negotiatedVersion: TLSVersion?
    /// The cipher suite the ServerHello (or a HelloRetryRequest) chose.
    public var cipherSuite: UInt16?
    /// The server answered the first ClientHello with a HelloRetryRequest.
    public var helloRetry = false

    public init() {}

    /// The IANA name of `cipherSuite`, or its code in hex.
    public var cipherName: String? { cipherSuite.map(TLSCipherSuiteName.name(of:)) }

    /// The `tls_version` audit column: `TLSv1.3`, as OpenSSL names the relay's own TLS.
    public var auditVersion: String? { negotiatedVersion?.auditName }

    /// The `tls_cipher` audit column.
    public var auditCipher: String? { cipherName }
}
