import RelayCore
import RelayIO

/// Builds the authenticator a configuration asks for, or nil for none. Everything that can
/// fail (an unreadable keytab, a key file with loose permissions, a helper that cannot be
/// started) fails here, at start or reload, never on a client's request.
enum AuthSetup {
    static func make(_ config: RelayConfig, helperLoop: EventLoop, logger: RelayLog) throws -> ProxyAuthenticator? {
        let auth = config.auth
        guard auth.isRequired else { return nil }
        let settings = UserStoreSettings(config: config)
        // A key file that exists but is unsafe (group/world bits, wrong length) stops the
        // start here; no key at all is fine (no users yet, or Basic only).
        let key = try settings.keySource.load()
        let storeSchemes = auth.schemes.filter { $0 != .negotiate && auth.helper(for: $0) == nil }
        let store: (any CredentialStore)? = storeSchemes.isEmpty
            ? nil : UserDirectory(storePath: settings.storePath, keySource: settings.keySource)
        if let directory = store as? UserDirectory, let problem = directory.problem {
            logger.log(.error, "user store: \(problem)")
        }
        // Digest's opaque comes from a key derived from the store key, so it stays the same
        // across reloads and restarts. Nonces live in memory: after either, each client
        // gets one round of stale=true and retries without prompting.
        let digestKey = key?.derivedKey(label: "dynrelay digest nonce key v1") ?? AuthCrypto.randomBytes(count: 32)
        var negotiate: GSSAcceptorCredential?
        if let keytab = auth.negotiate?.keytab, auth.helper(for: .negotiate) == nil {
            // The replay cache lives with the other state: writable under the hardened unit,
            // and shared by every credential a reload builds, so a reload cannot reopen a
            // window for replays.
            negotiate = try GSSAcceptorCredential(keytabPath: keytab, principal: auth.negotiate?.principal,
                                                  replayCache: .file(path: config.stateDir + "/krb5.rcache2"))
        }
        return ProxyAuthenticator(config: auth, store: store, digestKey: digestKey,
                                  helpers: AuthHelpers(auth, loop: helperLoop, log: logger),
                                  negotiate: negotiate)
    }
}
