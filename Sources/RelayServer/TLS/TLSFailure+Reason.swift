import RelayCore
import RelayIO

extension TLSFailure {
    /// The reason code for the audit row and the refusal: `asUpstream` for the relay's own
    /// TLS to an app server, otherwise the HTTPS listener's handshake with a client.
    public func reason(asUpstream: Bool) -> ReasonCode {
        if asUpstream {
            switch kind {
            case .certificateExpired: return .upstreamCertExpired
            case .certificateUntrusted: return .upstreamCertUntrusted
            case .hostMismatch: return .upstreamCertHostMismatch
            case .noSharedVersion: return .upstreamTLSVersion
            case .securityLevel: return .tlsSecurityLevel
            case .notTLS, .noClientCertificate, .other: return .upstreamTLSFailed
            }
        }
        switch kind {
        case .notTLS: return .notTLS
        case .noClientCertificate: return .clientCertRequired
        case .noSharedVersion: return .tlsVersionRefused
        case .securityLevel: return .tlsSecurityLevel
        case .certificateExpired, .certificateUntrusted, .hostMismatch, .other: return .clientTLSFailed
        }
    }
}
