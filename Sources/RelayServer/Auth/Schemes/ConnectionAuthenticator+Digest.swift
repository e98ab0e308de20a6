import RelayCore

// Digest (RFC 7616): the response checked here against the store's HA1, or against the
// HA1 a helper looked up.
extension ConnectionAuthenticator {
    func digest(_ authorization: ProxyAuthorization, request: ProxyAuthRequest, answer: @escaping Answer) {
        guard let digest = shared.digest, let credentials = try? DigestCredentials(authorization) else {
            return answer(.refused(ProxyAuthRefusal(reason: .badCredentials, scheme: "Digest")))
        }
        let claimed = credentials.userhash
            ? shared.store?.userForUserhash(credentials.username.lowercased(), realm: digest.configuration.realm,
                                            algorithm: credentials.algorithm)
            : credentials.username
        if shared.isLocked(principal: claimed, source: source) {
            return answer(.refused(ProxyAuthRefusal(reason: .lockedOut, claimedPrincipal: claimed, scheme: "Digest")))
        }
        // The store answers at once, so its verification runs here: no closure capturing the
        // credentials, the request and the authenticator on every Digest request.
        guard let helper = shared.helpers.digest, !credentials.userhash else {
            return answer(Self.verifyDigest(digest, credentials, request: request, claimed: claimed, helperHA1: nil,
                                            shared: shared, source: source))
        }
        // A browser's parallel requests share one lookup; distinct made-up names from one
        // address spend its allowance, so they cannot fill the helper's queue for everyone.
        let user = credentials.username
        let key = DigestLookupKey(user: user, realm: digest.configuration.realm)
        let answered: @Sendable (HelperDigestAnswer?) -> Void = { [shared, source] reply in
            guard let reply else {
                return answer(.refused(ProxyAuthRefusal(reason: .tooManyAttempts, claimedPrincipal: claimed, scheme: "Digest")))
            }
            switch reply {
            case .ha1(let ha1):
                answer(Self.verifyDigest(digest, credentials, request: request, claimed: claimed, helperHA1: ha1,
                                         shared: shared, source: source))
            case .err:
                answer(Self.verifyDigest(digest, credentials, request: request, claimed: claimed, helperHA1: nil,
                                         shared: shared, source: source))
            case .helperBroken, .overloaded:
                answer(Self.settle(shared, .authUnavailable, user: claimed, scheme: .digest, source: source, scope: .request))
            case .invalidInput:
                answer(Self.settle(shared, .badCredentials, user: claimed, scheme: .digest, source: source, scope: .request))
            }
        }
        guard shared.digestLookups.join(key, answered) else { return }
        guard shared.beginCheck(principal: user, source: source) else {
            return shared.digestLookups.finish(key, nil)
        }
        helper.digestHA1(user: user, realm: key.realm) { [shared, source] reply in
            shared.endCheck(principal: user, source: source)
            shared.digestLookups.finish(key, reply)
        }
    }

    /// Checks Digest credentials against the store, or against the HA1 a helper returned
    /// (`helperHA1`, nil when it knew no such user) when a helper is configured.
    private static func verifyDigest(_ digest: DigestAuthenticator, _ credentials: DigestCredentials,
                                     request: ProxyAuthRequest, claimed: String?, helperHA1: [UInt8]?,
                                     shared: ProxyAuthenticator, source: String) -> ProxyAuthOutcome {
        let store = shared.store
        let viaHelper = shared.helpers.digest != nil
        // A helper only looks the HA1 up, and its answer comes later: the guess is checked
        // here, after a second lock check, so guesses that waited for their lookups together
        // are checked one after another and cannot outrun the failure count.
        if viaHelper, shared.isLocked(principal: claimed, source: source) {
            return .refused(ProxyAuthRefusal(reason: .lockedOut, claimedPrincipal: claimed, scheme: "Digest"))
        }
        let signedTarget = request.originForm.flatMap { credentials.uri == $0 ? $0 : nil } ?? request.target
        let verification = digest.verify(
            credentials, method: request.method, requestTarget: signedTarget, now: ProxyAuthenticator.nonceClock(),
            credentialsVersion: viaHelper ? nil : store?.generation,
            userForUserhash: { hash, realm, algorithm in store?.userForUserhash(hash, realm: realm, algorithm: algorithm) },
            ha1: { user, realm, algorithm in
                if viaHelper { return algorithm == .md5 ? helperHA1 : nil }
                return store?.digestHA1(user: user, realm: realm, algorithm: algorithm)
            })
        switch verification {
        case .ok(let user):
            return settle(shared, nil, user: user, scheme: .digest, source: source, scope: .request)
        case .stale:
            return .refused(ProxyAuthRefusal(reason: .staleNonce, claimedPrincipal: claimed, scheme: "Digest",
                                             challenges: shared.challenges(stale: true)))
        case .failed(let failure):
            return settle(shared, ReasonCode(failure), user: claimed, scheme: .digest, source: source, scope: .request)
        }
    }
}
