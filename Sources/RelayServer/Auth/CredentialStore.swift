import RelayCore

/// Where the built-in schemes find users: the user store in `state-dir`. Every method is
/// safe to call from any thread; `verifyBasic` is slow on purpose (a password KDF) and
/// must not run on an event loop.
protocol CredentialStore: Sendable {
    /// True for the right password, false for a wrong one, nil for an unknown user.
    func verifyBasic(user: String, password: String) -> Bool?
    /// The raw HA1 for `user` in `realm`, or nil.
    func digestHA1(user: String, realm: String, algorithm: DigestAlgorithm) -> [UInt8]?
    /// The user whose `H(user:realm)` is `userhash` (lowercase hex), or nil.
    func userForUserhash(_ userhash: String, realm: String, algorithm: DigestAlgorithm) -> String?
    /// The stored name and NT hash for an NTLM user name (compared case-insensitively).
    func ntHash(user: String) -> (name: String, hash: [UInt8])?
    /// Whether `user` names an account, as Basic and Digest name it or as NTLM folds it.
    func hasAccount(_ user: String) -> Bool
    /// Moves whenever users or passwords change, so caches of verified logins drop out.
    var generation: UInt64 { get }
}
