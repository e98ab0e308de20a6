/// Why a TLS handshake or stream failed, in the kinds the relay reports differently, with
/// the detail an operator needs: the verify result, the alert received or sent, OpenSSL's
/// error stack.
public struct TLSFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kinds, each a distinct reason code upstream or on the listener.
    public enum Kind: Sendable, Equatable, CaseIterable {
        /// The peer's certificate is past its notAfter or before its notBefore.
        case certificateExpired
        /// The peer's certificate does not chain to a trusted CA (self-signed, unknown issuer…).
        case certificateUntrusted
        /// The certificate is valid but names another host or address.
        case hostMismatch
        /// The two sides share no allowed TLS version.
        case noSharedVersion
        /// A version below 1.2 is allowed, but OpenSSL's security level refuses its ciphers
        /// (the peer's or ours): OpenSSL says `internal_error` or "no ciphers available".
        case securityLevel
        /// Server role: the client's first bytes are not a TLS record (plain HTTP…).
        case notTLS
        /// The peer did not present the client certificate the server requires.
        case noClientCertificate
        /// Anything else (a reset, a truncated handshake, a decode error…).
        case other
    }

    /// What kind of failure, for the reason code.
    public let kind: Kind
    /// Readable detail: the verify result, the alert, OpenSSL's error stack.
    public let detail: String

    /// A failure of `kind`, explained by `detail`.
    public init(_ kind: Kind, detail: String) {
        self.kind = kind
        self.detail = detail
    }

    /// "certificateExpired: certificate verify: certificate has expired; …".
    public var description: String { "\(kind): \(detail)" }
}
