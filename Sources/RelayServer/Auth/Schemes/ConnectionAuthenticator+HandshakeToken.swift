import RelayCore

// What the connection-bound handshakes (NTLM, Negotiate, and their helpers) share: the
// decoded token of a step, and the account an NTLM message inside it claims.
extension ConnectionAuthenticator {
    /// The decoded token of a Negotiate or NTLM handshake step (bounded as GSS-API's), or
    /// nil when it is missing, empty or not strict base64.
    static func handshakeToken(_ authorization: ProxyAuthorization) -> [UInt8]? {
        guard let token = authorization.token68.flatMap({
            try? AuthCrypto.base64Decode($0, maxDecodedCount: GSSAcceptContext.maximumTokenSize)
        }), !token.isEmpty else { return nil }
        return token
    }

    /// Whether a handshake step may go on, given the account its token claims.
    enum ClaimCheck {
        /// Go on; failures count against this name too (nil: the source only).
        case proceed(claimed: String?)
        case refuse(ProxyAuthOutcome)
    }

    /// An NTLM AUTHENTICATE names the account, as Basic does, whether it comes bare or inside
    /// a Negotiate token (SPNEGO): the lockout check runs before the helper or GSS-API sees
    /// it, and failures count (and are audited) against that name. One this relay cannot
    /// parse is refused rather than passed on, or a guess in it would go uncounted.
    func checkClaim(in token: [UInt8], scheme: AuthConfig.Scheme) -> ClaimCheck {
        let found = scheme == .ntlm ? NTLMAuthenticateMessage.claim(in: token)
            : NTLMAuthenticateMessage.claim(inNegotiateToken: token)
        switch found {
        case .notAuthenticate, .user(nil):
            return .proceed(claimed: nil)
        case .malformed:
            shared.recordFailure(principal: nil, source: source)
            return .refuse(.refused(ProxyAuthRefusal(reason: .badCredentials, scheme: scheme.wireName)))
        case .user(let user?):
            guard shared.isLocked(principal: user, source: source) else { return .proceed(claimed: user) }
            return .refuse(.refused(ProxyAuthRefusal(reason: .lockedOut, claimedPrincipal: user, scheme: scheme.wireName)))
        }
    }
}
