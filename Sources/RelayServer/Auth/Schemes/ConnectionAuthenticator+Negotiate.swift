import RelayCore
import RelayIO

// Negotiate (RFC 4559) through GSS-API with the relay's keytab, each step on a worker,
// the context kept between steps.
extension ConnectionAuthenticator {
    func negotiate(_ authorization: ProxyAuthorization, answer: @escaping Answer) {
        if let helpers = shared.helpers.negotiate {
            return helperHandshake(authorization, scheme: .negotiate, pool: helpers, answer: answer)
        }
        guard let credential = shared.negotiate,
              let token = Self.handshakeToken(authorization)
        else {
            return answer(.refused(ProxyAuthRefusal(reason: .badCredentials, scheme: "Negotiate")))
        }
        let claimed: String?
        switch checkClaim(in: token, scheme: .negotiate) {
        case .refuse(let outcome):
            negotiateContext = nil
            return answer(outcome)
        case .proceed(let name):
            claimed = name
        }
        // A token that names an account (NTLM inside) is a password guess like a Basic one:
        // it waits on the worker queue, so it spends the same in-flight allowance.
        if let claimed, !shared.beginCheck(principal: claimed, source: source) {
            negotiateContext = nil
            return answer(.refused(ProxyAuthRefusal(reason: .tooManyAttempts, claimedPrincipal: claimed, scheme: "Negotiate")))
        }
        let context = negotiateContext ?? GSSAcceptContext(credential: credential)
        negotiateContext = context
        let connection = LoopBound(self, on: loop)
        let submitted = shared.workers.submit { [shared, source] in
            let step = context.accept(token: token)
            connection.loop.execute {
                if case .continueNeeded = step {} else { connection.value.negotiateContext = nil }
                if let claimed { shared.endCheck(principal: claimed, source: source) }
                answer(Self.negotiateOutcome(step, claimed: claimed, shared: shared, source: source))
            }
        }
        if !submitted {
            if let claimed { shared.endCheck(principal: claimed, source: source) }
            answer(.refused(ProxyAuthRefusal(reason: .authUnavailable, scheme: "Negotiate")))
        }
    }

    private static func negotiateOutcome(_ step: GSSAcceptResult, claimed: String?, shared: ProxyAuthenticator,
                                         source: String) -> ProxyAuthOutcome {
        switch step {
        case .continueNeeded(let token):
            return .refused(ProxyAuthRefusal(reason: .authContinue, scheme: "Negotiate",
                                             challenges: ["Negotiate " + AuthCrypto.base64Encode(token)]))
        case .complete(let principal, let token):
            shared.recordSuccess(principal: principal, source: source)
            if let claimed, claimed != principal { shared.recordSuccess(principal: claimed, source: source) }
            let mutual = token.flatMap { $0.isEmpty ? nil : "Negotiate " + AuthCrypto.base64Encode($0) }
            return .granted(AuthPrincipal(name: principal, scheme: "Negotiate"), scope: .connection, mutualAuth: mutual)
        case .failed(let error):
            shared.recordFailure(principal: claimed, source: source)
            // The audit reason reads `gss-error: <major>: <minor>` (GSS's words, never a token).
            let detail = error.code == GSSError.Code.gss ? error.message : error.description
            return .refused(ProxyAuthRefusal(reason: .gssError, detail: detail, claimedPrincipal: claimed,
                                             scheme: "Negotiate", challenges: shared.challenges()))
        }
    }
}
