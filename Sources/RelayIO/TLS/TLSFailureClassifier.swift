import COpenSSL

/// Turns what OpenSSL left after a failed call (the `SSL_get_error` class, the error
/// stack, the verify result, the alerts seen) into a `TLSFailure`. OpenSSL's own words are
/// misleading for several of the cases the relay must tell apart: a version whose ciphers
/// are under the security level shows as the peer's `internal_error` alert, plaintext on a
/// TLS port as "wrong version number".
struct TLSFailureClassifier {
    let isServer: Bool
    /// The context allows a version below 1.2 (and so runs at security level 0).
    let allowsLegacy: Bool
    /// `SSL_get_verify_result` after the failure.
    let verifyResult: Int
    /// The last alert received and sent (`SSL_AD_*`), when any.
    let alertReceived: Int32?
    let alertSent: Int32?
    /// Whether the first record received was not TLS; nil when none arrived.
    let firstRecordIsNotTLS: Bool?

    func classify(_ errors: OpenSSLErrorStack, errno code: Int32 = 0) -> TLSFailure {
        var parts: [String] = []
        if verifyResult != Int(X509_V_OK) {
            parts.append("certificate verify: \(String(cString: X509_verify_cert_error_string(verifyResult)))")
        }
        if let alertReceived { parts.append("alert received: \(Self.alertName(alertReceived))") }
        if let alertSent { parts.append("alert sent: \(Self.alertName(alertSent))") }
        if let text = errors.text { parts.append(text) }
        if errors.entries.isEmpty && code != 0 { parts.append("errno \(code)") }
        let kind = kind(errors)
        if kind == .securityLevel {
            parts.insert("a TLS version below 1.2 was refused by a peer's security level"
                + " (its ciphers need SECLEVEL=0 on both sides)", at: 0)
        }
        let detail = parts.isEmpty ? "the connection closed during the handshake" : parts.joined(separator: "; ")
        return TLSFailure(kind, detail: detail)
    }

    private func kind(_ errors: OpenSSLErrorStack) -> TLSFailure.Kind {
        if let verified = verifyKind { return verified }
        if errors.hasSSLReason(SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE)
            || errors.hasSSLReason(SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED) {
            return .noClientCertificate
        }
        // "wrong version number" is OpenSSL's answer both to plaintext and to a TLS record of
        // a version it will not read: the first record's header tells them apart.
        if isServer && (errors.hasSSLReason(SSL_R_HTTP_REQUEST) || errors.hasSSLReason(SSL_R_HTTPS_PROXY_REQUEST)
                        || firstRecordIsNotTLS == true) {
            return .notTLS
        }
        let versionReasons = [SSL_R_UNSUPPORTED_PROTOCOL, SSL_R_NO_PROTOCOLS_AVAILABLE, SSL_R_TLSV1_ALERT_PROTOCOL_VERSION,
                              SSL_R_WRONG_VERSION_NUMBER, SSL_R_VERSION_TOO_LOW, SSL_R_VERSION_TOO_HIGH,
                              SSL_R_WRONG_SSL_VERSION, SSL_R_UNSUPPORTED_SSL_VERSION]
        if versionReasons.contains(where: errors.hasSSLReason) || alertReceived == Int32(SSL_AD_PROTOCOL_VERSION) {
            return .noSharedVersion
        }
        if allowsLegacy && (errors.hasSSLReason(SSL_R_TLSV1_ALERT_INTERNAL_ERROR)
                            || errors.hasSSLReason(SSL_R_NO_CIPHERS_AVAILABLE)
                            || errors.hasSSLReason(SSL_R_NO_SHARED_CIPHER)
                            || errors.hasSSLReason(SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM)) {
            return .securityLevel
        }
        return .other
    }

    /// The kind a failed certificate verification stands for, nil when it passed.
    private var verifyKind: TLSFailure.Kind? {
        switch Int32(verifyResult) {
        case X509_V_OK: return nil
        case X509_V_ERR_CERT_HAS_EXPIRED, X509_V_ERR_CERT_NOT_YET_VALID: return .certificateExpired
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH: return .hostMismatch
        default: return .certificateUntrusted
        }
    }

    static func alertName(_ alert: Int32) -> String {
        "\(String(cString: SSL_alert_desc_string_long(alert))) (\(alert))"
    }
}
