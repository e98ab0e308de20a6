import RelayCore
import RelayIO

// NTLM and Negotiate through a Squid helper reserved for the connection's handshake.
extension ConnectionAuthenticator {
    func helperHandshake(_ authorization: ProxyAuthorization, scheme: AuthConfig.Scheme, pool: StatefulHelperPool,
                         answer: @escaping Answer) {
        guard let token = Self.handshakeToken(authorization) else {
            return answer(.refused(ProxyAuthRefusal(reason: .badCredentials, scheme: scheme.wireName)))
        }
        let claimed: String?
        switch checkClaim(in: token, scheme: scheme) {
        case .refuse(let outcome):
            helperConversations.removeValue(forKey: scheme)?.finish()
            return answer(outcome)
        case .proceed(let name):
            claimed = name
        }
        let first = helperConversations[scheme] == nil
        guard let talk = helperConversations[scheme] ?? pool.begin() else {
            return answer(.refused(ProxyAuthRefusal(reason: .authUnavailable, scheme: scheme.wireName)))
        }
        helperConversations[scheme] = talk
        let connection = LoopBound(self, on: loop)
        talk.send(token: token, first: first) { [shared, source] reply in
            connection.loop.execute {
                let outcome = Self.helperOutcome(reply, scheme: scheme, claimed: claimed, shared: shared, source: source)
                if case .refused(let refusal) = outcome, refusal.reason == .authContinue {
                    return answer(outcome)
                }
                connection.value.helperConversations.removeValue(forKey: scheme)?.finish()
                answer(outcome)
            }
        }
    }

    private static func helperOutcome(_ reply: HelperTokenAnswer, scheme: AuthConfig.Scheme, claimed: String?,
                                      shared: ProxyAuthenticator, source: String) -> ProxyAuthOutcome {
        switch reply {
        case .continue(let token):
            return .refused(ProxyAuthRefusal(reason: .authContinue, scheme: scheme.wireName,
                                             challenges: ["\(scheme.wireName) " + AuthCrypto.base64Encode(token)]))
        case .done(let user, let token):
            shared.recordSuccess(principal: user, source: source)
            // The helper's name (`DOMAIN\user`) need not be the one the client claimed.
            if let claimed, claimed != user { shared.recordSuccess(principal: claimed, source: source) }
            let mutual = token.flatMap { $0.isEmpty ? nil : "\(scheme.wireName) " + AuthCrypto.base64Encode($0) }
            return .granted(AuthPrincipal(name: user, scheme: scheme.wireName), scope: .connection, mutualAuth: mutual)
        case .failed(let reason):
            shared.recordFailure(principal: claimed, source: source)
            // An NTLM helper's own words go to the audit row: ntlm_auth's NT status tells a
            // wrong password from a locked or disabled account. Cut short: a helper line may
            // run to 64 KiB.
            let detail = scheme == .negotiate ? "helper refused the token" : reason.map { String($0.prefix(120)) }
            return .refused(ProxyAuthRefusal(reason: scheme == .negotiate ? .gssError : .badPassword, detail: detail,
                                             claimedPrincipal: claimed, scheme: scheme.wireName,
                                             challenges: shared.challenges()))
        case .broken:
            return .refused(ProxyAuthRefusal(reason: .authUnavailable, claimedPrincipal: claimed, scheme: scheme.wireName))
        }
    }
}
