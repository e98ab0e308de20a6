import COpenSSL

extension TLSContext {
    /// Length of the session ticket keys OpenSSL 3 keeps in a context (name, HMAC and AES
    /// keys).
    static let ticketKeyLength = 80

    /// A server context for a TLS listener.
    ///
    /// - `certificateFile`: PEM chain, leaf first; `keyFile`: its private key, checked
    ///   against the leaf.
    /// - `clientCAFile`: CAs that sign client certificates; when given, clients are asked
    ///   for one (their names are sent), and `requireClientCertificate` refuses a client
    ///   that offers none.
    /// - `inheritingTicketKeysFrom`: the context this one replaces on reload; its session
    ///   ticket keys carry over, so clients resume across a reload.
    public static func server(certificateFile: String, keyFile: String, clientCAFile: String? = nil,
                              requireClientCertificate: Bool = false, versions: TLSProtocols,
                              inheritingTicketKeysFrom previous: TLSContext? = nil) throws(TLSSetupError) -> TLSContext {
        let handle = try makeHandle(TLS_server_method())
        do throws(TLSSetupError) {
            try configureServer(handle, certificateFile: certificateFile, keyFile: keyFile, clientCAFile: clientCAFile,
                                requireClientCertificate: requireClientCertificate, versions: versions,
                                previous: previous)
        } catch {
            SSL_CTX_free(handle)
            throw error
        }
        return TLSContext(handle: handle, role: .server, protocols: versions, verifiesPeer: clientCAFile != nil,
                          sessionCache: nil)
    }

    private static func configureServer(_ handle: OpaquePointer, certificateFile: String, keyFile: String,
                                        clientCAFile: String?, requireClientCertificate: Bool, versions: TLSProtocols,
                                        previous: TLSContext?) throws(TLSSetupError) {
        applyCommonSettings(handle)
        try versions.apply(to: handle)
        ERR_clear_error()
        guard SSL_CTX_use_certificate_chain_file(handle, certificateFile) == 1 else {
            throw TLSSetupError(.certificate, "cannot read certificate", file: certificateFile)
        }
        guard SSL_CTX_use_PrivateKey_file(handle, keyFile, SSL_FILETYPE_PEM) == 1 else {
            // OpenSSL checks the key against the certificate as it loads it.
            let errors = OpenSSLErrorStack.drain()
            if errors.entries.contains(where: { $0.library == ERR_LIB_X509 && $0.reason == X509_R_KEY_VALUES_MISMATCH }) {
                throw TLSSetupError(.keyMismatch, "key \(keyFile) does not match certificate", file: certificateFile,
                                    errors: errors)
            }
            throw TLSSetupError(.privateKey, "cannot read private key", file: keyFile, errors: errors)
        }
        guard SSL_CTX_check_private_key(handle) == 1 else {
            throw TLSSetupError(.keyMismatch, "key \(keyFile) does not match certificate", file: certificateFile)
        }
        if let clientCAFile {
            guard SSL_CTX_load_verify_locations(handle, clientCAFile, nil) == 1,
                  let names = SSL_load_client_CA_file(clientCAFile) else {
                throw TLSSetupError(.caFile, "cannot read client CA file", file: clientCAFile)
            }
            SSL_CTX_set_client_CA_list(handle, names)
            SSL_CTX_set_verify(handle, SSL_VERIFY_PEER | (requireClientCertificate ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                               nil)
        }
        // Resumption by stateless tickets only: no per-context server cache to grow, and a
        // ticket outlives the context that issued it once the keys carry over.
        _ = crelay_SSL_CTX_set_session_cache_mode(handle, Int(SSL_SESS_CACHE_OFF))
        let sessionContext: [UInt8] = Array("dynrelay".utf8)
        guard SSL_CTX_set_session_id_context(handle, sessionContext, UInt32(sessionContext.count)) == 1 else {
            throw TLSSetupError(.openSSL, "cannot set the session id context")
        }
        if let previous {
            var keys = [UInt8](repeating: 0, count: ticketKeyLength)
            guard crelay_SSL_CTX_get_tlsext_ticket_keys(previous.handle, &keys, ticketKeyLength) == 1,
                  crelay_SSL_CTX_set_tlsext_ticket_keys(handle, &keys, ticketKeyLength) == 1 else {
                throw TLSSetupError(.openSSL, "cannot carry the session ticket keys over")
            }
            keys.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
        }
    }
}
