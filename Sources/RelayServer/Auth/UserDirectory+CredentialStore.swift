import RelayCore

extension UserDirectory: CredentialStore {
    func verifyBasic(user: String, password: String) -> Bool? {
        switch verifyBasic(user: user, password: password) as PasswordCheck {
        case .ok: return true
        case .failed(let reason) where reason == .unknownUser: return nil
        case .failed: return false
        }
    }

    func hasAccount(_ user: String) -> Bool {
        basicVerifier(for: user) != nil || ntlmAccount(user: user) != nil
    }

    func ntHash(user: String) -> (name: String, hash: [UInt8])? {
        ntlmAccount(user: user).map { ($0.name, $0.ntHash) }
    }
}
