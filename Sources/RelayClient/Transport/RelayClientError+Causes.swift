import Glibc
import RelayIO

extension RelayClientError {
    /// A socket failure while `doing` something: the errno picks the code.
    init(_ error: IOError, doing: String) {
        let code: Code
        switch error.errno {
        case ECONNRESET, EPIPE, ECONNABORTED: code = .connectionReset
        case ECONNREFUSED: code = .connectionRefused
        case ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL: code = .unreachable
        case ETIMEDOUT: code = .timeout
        default: code = .connectionFailed
        }
        self.init(code, "\(doing): \(error)", errno: error.errno)
    }

    /// A TLS handshake or stream failure: the kinds the relay's classifier tells apart
    /// (`TLSFailureClassifier`) keep their own codes.
    init(_ failure: TLSFailure, doing: String) {
        let code: Code
        switch failure.kind {
        case .certificateExpired: code = .tlsCertExpired
        case .certificateUntrusted: code = .tlsCertUntrusted
        case .hostMismatch: code = .tlsHostMismatch
        case .noSharedVersion, .securityLevel: code = .tlsVersion
        case .notTLS, .noClientCertificate, .other: code = .tlsFailed
        }
        self.init(code, doing, tlsDetail: failure.detail)
    }

    /// TLS options that could not be turned into a context.
    init(_ error: TLSSetupError) {
        self.init(.tlsConfiguration, "cannot set up TLS: \(error)")
    }
}
