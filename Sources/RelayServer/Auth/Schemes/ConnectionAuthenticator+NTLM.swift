import RelayCore

// NTLM from the user store: a handshake bound to the connection, its challenge kept
// between the client's two messages.
extension ConnectionAuthenticator {
    func ntlm(_ authorization: ProxyAuthorization, answer: @escaping Answer) {
        guard let configuration = shared.ntlm else { return answer(refusal(.unsupportedAuth, scheme: "NTLM")) }
        if let helpers = shared.helpers.ntlm {
            return helperHandshake(authorization, scheme: .ntlm, pool: helpers, answer: answer)
        }
        let message = authorization.token68.flatMap {
            try? AuthCrypto.base64Decode($0, maxDecodedCount: NTLMAuthenticateMessage.maxLength)
        }
        // The claimed name, for the lockout check before any verification work.
        let claimed = message.flatMap { try? NTLMAuthenticateMessage(parsing: $0) }?.user
        if let claimed, shared.isLocked(principal: claimed, source: source) {
            ntlm = nil
            return answer(.refused(ProxyAuthRefusal(reason: .lockedOut, claimedPrincipal: claimed, scheme: "NTLM")))
        }
        var handshake = ntlm ?? NTLMHandshake(configuration: configuration)
        let store = shared.store
        var storedName: String?
        let action = handshake.receive(authorization, unixTime: ProxyAuthenticator.unixTime()) { user, _ in
            guard let found = store?.ntHash(user: user) else { return nil }
            storedName = found.name
            return found.hash
        }
        switch action {
        case .sendChallenge(let challenge):
            ntlm = handshake
            answer(.refused(ProxyAuthRefusal(reason: .authContinue, scheme: "NTLM",
                                             challenges: ["NTLM " + AuthCrypto.base64Encode(challenge)])))
        case .authenticated(let user, _):
            ntlm = nil
            answer(Self.settle(shared, nil, user: storedName ?? user, scheme: .ntlm, source: source, scope: .connection))
        case .failed(let failure, _):
            // A failed handshake is over; the client may start a new one on this connection.
            ntlm = nil
            answer(Self.settle(shared, ReasonCode(failure), user: claimed, scheme: .ntlm, source: source,
                               scope: .connection))
        }
    }
}
