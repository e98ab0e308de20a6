import RelayCore

/// Builds the authenticator a configuration asks for, or nil for none. Everything that can
/// fail (an unreadable keytab, a key file with loose permissions, a helper that cannot be
/// started) fails here, at start or reload, never on a client's request.
enum AuthSetup {
    static func make(_ config: RelayConfig, logger: RelayLog) throws -> ProxyAuthenticator? {
        let auth = config.auth
        guard auth.isRequired else { return nil }
        let store: (any CredentialStore)? = nil
        let digestKey = AuthCrypto.randomBytes(count: 32)
        var negotiate: GSSAcceptorCredential?
        if let keytab = auth.negotiate?.keytab, auth.helper(for: .negotiate) == nil {
            // The replay cache lives with the other state: writable under the hardened unit,
            // and shared by every credential a reload builds, so a reload cannot reopen a
            // window for replays.
            negotiate = try GSSAcceptorCredential(keytabPath: keytab, principal: auth.negotiate?.principal,
                                                  replayCache: .file(path: config.stateDir + "/krb5.rcache2"))
        }
        return ProxyAuthenticator(config: auth, store: store, digestKey: digestKey, helpers: AuthHelpers(),
                                  negotiate: negotiate)
    }
}
