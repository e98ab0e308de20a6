import RelayCore
import RelayIO

/// Authenticates the requests of one client connection, keeping what the multi-message
/// schemes need between messages (the NTLM handshake, the GSS-API context, a reserved
/// helper). Every answer arrives on the connection's loop: at once when it needs no other
/// thread (a cached Basic login, Digest, NTLM from the store), else after a hop back from
/// the worker or helper. The driver must cope with an answer inside the call.
/// Loop-confined: touched only on its loop's thread, so not `Sendable`; the steps that run
/// elsewhere come back to it through a `LoopBound`.
final class ConnectionAuthenticator {
    /// The driver's callback, called on the connection's loop.
    typealias Completion = (ProxyAuthOutcome) -> Void
    /// How a scheme answers, from whichever thread its check ends on.
    typealias Answer = @Sendable (ProxyAuthOutcome) -> Void

    // Each scheme's steps are in Schemes/, one file a scheme; the state below is what they
    // share or keep between a connection's messages.
    let shared: ProxyAuthenticator
    let loop: EventLoop
    /// The client's address without port: what source lockouts count.
    let source: String
    /// NTLM from the user store: the handshake between its challenge and the answer.
    var ntlm: NTLMHandshake?
    /// A helper process reserved for this connection's NTLM or Negotiate handshake.
    var helperConversations: [AuthConfig.Scheme: HelperConversation] = [:]
    /// Negotiate through GSS-API: the context between the handshake's steps.
    var negotiateContext: GSSAcceptContext?

    init(shared: ProxyAuthenticator, loop: EventLoop, clientAddress: String) {
        self.shared = shared
        self.loop = loop
        self.source = Self.lockoutSource(of: clientAddress)
    }

    /// Releases what a connection-bound handshake holds (a reserved helper process).
    func close() {
        for conversation in helperConversations.values { conversation.finish() }
        helperConversations = [:]
        negotiateContext = nil
    }

    /// Authenticates one request; call on the connection's loop. `completion` runs once,
    /// there, perhaps before this returns.
    func authenticate(_ request: ProxyAuthRequest, completion: @escaping Completion) {
        let caller = LoopBound(completion, on: loop)
        // No hop when already on the loop: a wake-up per tunnel costs more than the check.
        let answer: Answer = { [shared] outcome in
            let outcome = Self.naming(outcome, accountsIn: shared.store)
            if caller.loop.inLoop { caller.value(outcome) } else { caller.loop.execute { caller.value(outcome) } }
        }
        if shared.isLocked(principal: nil, source: source) {
            return answer(.refused(ProxyAuthRefusal(reason: .lockedOut)))
        }
        guard let value = request.authorization else {
            return answer(refusal(.authRequired))
        }
        let authorization: ProxyAuthorization
        do {
            authorization = try ProxyAuthorization(parsing: value)
        } catch {
            return answer(.refused(ProxyAuthRefusal(reason: .badCredentials)))
        }
        let offered = shared.schemes.first { authorization.hasScheme($0.wireName) }
        guard let scheme = offered else {
            return answer(refusal(.unsupportedAuth, scheme: authorization.scheme))
        }
        switch scheme {
        case .basic: basic(authorization, answer: answer)
        case .digest: digest(authorization, request: request, answer: answer)
        case .ntlm: ntlm(authorization, answer: answer)
        case .negotiate: negotiate(authorization, answer: answer)
        }
    }

    // MARK: Outcomes

    /// Marks a refusal whose claimed name is an account of the user store, the one kind of
    /// claimed name the trail records as it is.
    private static func naming(_ outcome: ProxyAuthOutcome, accountsIn store: (any CredentialStore)?) -> ProxyAuthOutcome {
        guard case .refused(var refusal) = outcome, let name = refusal.claimedPrincipal,
              store?.hasAccount(name) == true else { return outcome }
        refusal.claimedIsAccount = true
        return .refused(refusal)
    }

    /// Records the result for lockouts and turns it into the session's outcome.
    static func settle(_ shared: ProxyAuthenticator, _ failure: ReasonCode?, user: String?,
                       scheme: AuthConfig.Scheme, source: String, scope: AuthScope) -> ProxyAuthOutcome {
        guard let failure else {
            let name = user ?? ""
            shared.recordSuccess(principal: name, source: source)
            return .granted(AuthPrincipal(name: name, scheme: scheme.wireName), scope: scope)
        }
        if ![.authUnavailable, .internalError, .tooManyAttempts].contains(failure) {
            // A name no account has counts against its source only: there is no account to
            // protect, and a lockout of that name would record it (perhaps a password typed
            // in the wrong field) in clear in its `locked-out` rows.
            shared.recordFailure(principal: failure == .unknownUser ? nil : user, source: source)
        }
        let challenges = failure.refusalStatus == 407 ? shared.challenges() : []
        return .refused(ProxyAuthRefusal(reason: failure, claimedPrincipal: user, scheme: scheme.wireName,
                                         challenges: challenges))
    }

    /// A 407 that offers every configured scheme.
    func refusal(_ reason: ReasonCode, scheme: String? = nil) -> ProxyAuthOutcome {
        .refused(ProxyAuthRefusal(reason: reason, scheme: scheme, challenges: shared.challenges()))
    }
}
