import RelayCore

// Basic (RFC 7617): a password checked by a helper, or by the user store's slow KDF on a
// worker, with parallel logins of the same credentials sharing one check.
extension ConnectionAuthenticator {
    func basic(_ authorization: ProxyAuthorization, answer: @escaping Answer) {
        guard let credentials = try? BasicCredentials(authorization) else {
            return answer(.refused(ProxyAuthRefusal(reason: .badCredentials, scheme: "Basic")))
        }
        let user = credentials.user
        if shared.isLocked(principal: user, source: source) {
            return answer(.refused(ProxyAuthRefusal(reason: .lockedOut, claimedPrincipal: user, scheme: "Basic")))
        }
        let finish: @Sendable (ReasonCode?) -> Void = { [shared, source] failure in
            answer(Self.settle(shared, failure, user: user, scheme: .basic, source: source, scope: .sameCredentials))
        }
        if let helper = shared.helpers.basic {
            // A browser's parallel connections with the same credentials share one check.
            let token = shared.cache.token(user: user, password: credentials.password)
            guard shared.basicChecks.join(token, finish) else { return }
            guard shared.beginCheck(principal: user, source: source) else {
                return shared.basicChecks.finish(token, .tooManyAttempts)
            }
            return helper.basic(user: user, password: credentials.password) { [shared, source] verdict in
                shared.endCheck(principal: user, source: source)
                shared.basicChecks.finish(token, Self.reason(for: verdict))
            }
        }
        guard let store = shared.store else { return finish(.unknownUser) }
        let token = shared.cache.token(user: user, password: credentials.password)
        let password = credentials.password
        switch shared.cache.lookup(token, generation: store.generation, now: shared.clock()) {
        case .proven:
            return finish(nil)
        case .provenRenewDue:
            finish(nil)
            // Nobody waits for this check, so it never queues ahead of one somebody waits for.
            let started = shared.workers.submitIfIdle { [shared] in
                if Self.prove(token, user: user, password: password, store: store, shared: shared) != nil {
                    shared.cache.remove(token)
                }
            }
            if !started { shared.cache.renewalNotStarted(token) }
            return
        case .unknown:
            break
        }
        // One KDF for a burst of connections with the same credentials.
        guard shared.basicChecks.join(token, finish) else { return }
        guard shared.beginCheck(principal: user, source: source) else {
            return shared.basicChecks.finish(token, .tooManyAttempts)
        }
        let submitted = shared.workers.submit { [shared, source] in
            let failure = Self.prove(token, user: user, password: password, store: store, shared: shared)
            shared.endCheck(principal: user, source: source)
            shared.basicChecks.finish(token, failure)
        }
        if !submitted {
            shared.endCheck(principal: user, source: source)
            shared.basicChecks.finish(token, .authUnavailable)
        }
    }

    /// Runs the slow password check (on a worker) and remembers a success under the store
    /// generation it was made against; nil when the password is right, else why not.
    private static func prove(_ token: CredentialTag, user: String, password: String, store: CredentialStore,
                              shared: ProxyAuthenticator) -> ReasonCode? {
        let generation = store.generation
        switch store.verifyBasic(user: user, password: password) {
        case true?:
            shared.cache.insert(token, generation: generation, now: shared.clock())
            return nil
        case false?: return .badPassword
        case nil: return .unknownUser
        }
    }

    private static func reason(for verdict: HelperVerdict) -> ReasonCode? {
        switch verdict {
        case .ok: return nil
        // basic_ncsa_auth and its kin say which; anything else counts as a wrong password.
        case .err(let message) where message?.lowercased().contains("no such user") == true: return .unknownUser
        case .err: return .badPassword
        case .helperBroken, .overloaded: return .authUnavailable
        case .invalidInput: return .badCredentials
        }
    }
}
