import COpenSSL

/// What the handshake settled, for the audit trail and for authentication by certificate.
/// Read after `handshake()` returned `.done`; nil before, or once freed.
extension TLSConnection {
    /// The negotiated version as `SSL_get_version` names it: "TLSv1.3" (and "TLSv1" for 1.0).
    public var protocolVersion: String? {
        guard let ssl = handle, SSL_is_init_finished(ssl) == 1 else { return nil }
        return String(cString: SSL_get_version(ssl))
    }

    /// The negotiated version's wire code (`0x0304` for TLS 1.3).
    public var protocolWireVersion: UInt16? {
        guard let ssl = handle, SSL_is_init_finished(ssl) == 1 else { return nil }
        return UInt16(truncatingIfNeeded: SSL_version(ssl))
    }

    /// The cipher suite by OpenSSL's name (`TLS_AES_256_GCM_SHA384`,
    /// `ECDHE-RSA-AES128-GCM-SHA256`), as `openssl s_client`, nginx and haproxy log it, so
    /// the audit trail and the operators' other logs use one vocabulary.
    public var cipherName: String? {
        guard let ssl = handle, SSL_is_init_finished(ssl) == 1, let cipher = SSL_get_current_cipher(ssl),
              let name = SSL_CIPHER_get_name(cipher) else { return nil }
        return String(cString: name)
    }

    /// Server role: the host name the client sent as SNI.
    public var requestedServerName: String? {
        guard let ssl = handle, let name = SSL_get_servername(ssl, Int32(TLSEXT_NAMETYPE_host_name)) else { return nil }
        return String(cString: name)
    }

    /// The peer's session was resumed (a ticket or cached session), not a full handshake.
    public var sessionReused: Bool {
        guard let ssl = handle else { return false }
        return SSL_session_reused(ssl) == 1
    }

    /// Server role: the identity of a verified client certificate: its first subjectAltName
    /// email if it has one, else its subject's common name. Nil without a certificate, or
    /// when the context verifies none (no client CA), so an unverified name never passes
    /// for an identity.
    public var peerCertificateIdentity: String? {
        guard contextVerifiesPeer, let ssl = handle, SSL_is_init_finished(ssl) == 1,
              SSL_get_verify_result(ssl) == Int(X509_V_OK), let certificate = SSL_get0_peer_certificate(ssl) else {
            return nil
        }
        return TLSCertificateIdentity.identity(of: certificate)
    }
}
