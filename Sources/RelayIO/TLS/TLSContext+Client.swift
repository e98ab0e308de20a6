import COpenSSL

extension TLSContext {
    /// A client context for the relay's own TLS to app servers.
    ///
    /// - `caFile`: PEM CAs to trust instead of the system store.
    /// - `verify`: check the server's certificate and name (`false` only by explicit config).
    /// - `sessionCacheCapacity`: upstreams whose most recent TLS session is kept for resumption.
    public static func client(caFile: String? = nil, verify: Bool = true, versions: TLSProtocols,
                              sessionCacheCapacity: Int = 256) throws(TLSSetupError) -> TLSContext {
        let handle = try makeHandle(TLS_client_method())
        do throws(TLSSetupError) {
            applyCommonSettings(handle)
            try versions.apply(to: handle)
            ERR_clear_error()
            if let caFile {
                guard SSL_CTX_load_verify_locations(handle, caFile, nil) == 1 else {
                    throw TLSSetupError(.caFile, "cannot read CA file", file: caFile)
                }
            } else if SSL_CTX_set_default_verify_paths(handle) != 1 {
                throw TLSSetupError(.caFile, "cannot load the system trust store")
            }
            SSL_CTX_set_verify(handle, verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nil)
            // Sessions go to our cache, keyed by upstream, not OpenSSL's (keyed by session id,
            // which a client cannot look up by host).
            _ = crelay_SSL_CTX_set_session_cache_mode(handle, Int(SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE))
            SSL_CTX_sess_set_new_cb(handle, newClientSession)
        } catch {
            SSL_CTX_free(handle)
            throw error
        }
        return TLSContext(handle: handle, role: .client, protocols: versions, verifiesPeer: verify,
                          sessionCache: TLSSessionCache(capacity: sessionCacheCapacity))
    }
}

/// OpenSSL hands over each new client session (after the handshake in TLS 1.2, with each
/// ticket after it in 1.3): it goes to the cache under the connection's upstream key.
/// Returns 1 when the cache took the reference.
private let newClientSession: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32 = { ssl, session in
    guard let ssl, let session, let hooks = TLSConnectionHooks.of(ssl), let cache = hooks.sessionCache,
          let key = hooks.sessionKey else { return 0 }
    cache.store(session, for: key)
    return 1
}
