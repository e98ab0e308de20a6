import RelayCore

/// Where the user store lives, where its key is, and the Digest realm its HA1s are
/// computed for: everything `dynrelay users` and the daemon take from the configuration.
public struct UserStoreSettings: Sendable, Equatable {
    /// The state directory (created 0700 when the CLI first writes the store).
    public var stateDir: String
    /// The SQLite database, `<state-dir>/users.db`.
    public var storePath: String
    /// The key file the configuration names, if any.
    public var explicitKeyFile: String?
    /// The realm of `auth digest`; HA1s are computed for it when a password is set.
    public var digestRealm: String


    /// Settings given explicitly.
    public init(stateDir: String, storePath: String, explicitKeyFile: String?, digestRealm: String) {
        self.stateDir = stateDir
        self.storePath = storePath
        self.explicitKeyFile = explicitKeyFile
        self.digestRealm = digestRealm
    }

    /// The settings `config` implies; the one place that reads auth settings from it.
    public init(config: RelayConfig) {
        self.init(stateDir: config.stateDir, storePath: config.stateDir + "/users.db",
                  explicitKeyFile: config.auth.userKeyFile, digestRealm: config.auth.storeRealm)
    }

    /// Where the key is looked for, `$CREDENTIALS_DIRECTORY` included.
    public var keySource: UserStoreKeySource {
        UserStoreKeySource(explicitPath: explicitKeyFile, stateDir: stateDir)
    }
}
