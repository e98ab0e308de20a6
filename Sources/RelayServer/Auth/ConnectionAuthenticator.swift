import RelayCore
import RelayIO

/// Authenticates the requests of one client connection, keeping what the multi-message
/// schemes need between messages (the NTLM handshake, the GSS-API context, a reserved
/// helper). Every answer arrives on the connection's loop: at once when it needs no other
/// thread (a cached Basic login, Digest, NTLM from the store), else after a hop back from
/// the worker or helper. The driver must cope with an answer inside the call.
/// Loop-confined: touched only on its loop's thread.
final class ConnectionAuthenticator: @unchecked Sendable {
    typealias Completion = @Sendable (ProxyAuthOutcome) -> Void

    private let shared: ProxyAuthenticator
    private let loop: EventLoop
    /// The client's address without port: what source lockouts count.
    private let source: String
    private var ntlm: NTLMHandshake?
    /// A helper process reserved for this connection's NTLM or Negotiate handshake.
    private var helperConversations: [AuthConfig.Scheme: HelperConversation] = [:]
    private var negotiateContext: GSSAcceptContext?

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

    func authenticate(_ request: ProxyAuthRequest, completion: @escaping Completion) {
        // No hop when already on the loop: a wake-up per tunnel costs more than the check.
        let answer: Completion = { [loop, shared] outcome in
            let outcome = Self.naming(outcome, accountsIn: shared.store)
            if loop.inLoop { completion(outcome) } else { loop.execute { completion(outcome) } }
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

    // MARK: Basic

    private func basic(_ authorization: ProxyAuthorization, answer: @escaping Completion) {
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

    // MARK: Digest

    private func digest(_ authorization: ProxyAuthorization, request: ProxyAuthRequest, answer: @escaping Completion) {
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
        // The store answers at once, so its verification runs here without a closure to
        // carry the request across (it captured the credentials, the request and the
        // authenticator on every Digest request).
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

    // MARK: NTLM

    private func ntlm(_ authorization: ProxyAuthorization, answer: @escaping Completion) {
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

    // MARK: Negotiate

    private func negotiate(_ authorization: ProxyAuthorization, answer: @escaping Completion) {
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
        let submitted = shared.workers.submit { [shared, source, loop] in
            let step = context.accept(token: token)
            loop.execute { [self] in
                if case .continueNeeded = step {} else { negotiateContext = nil }
                if let claimed { shared.endCheck(principal: claimed, source: source) }
                answer(Self.negotiateOutcome(step, claimed: claimed, shared: shared, source: source))
            }
        }
        if !submitted {
            if let claimed { shared.endCheck(principal: claimed, source: source) }
            answer(.refused(ProxyAuthRefusal(reason: .authUnavailable, scheme: "Negotiate")))
        }
    }

    // MARK: Helpers

    private func helperHandshake(_ authorization: ProxyAuthorization, scheme: AuthConfig.Scheme, pool: StatefulHelperPool,
                                 answer: @escaping Completion) {
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
        talk.send(token: token, first: first) { [self, shared, source] reply in
            loop.execute { [self] in
                let outcome = Self.helperOutcome(reply, scheme: scheme, claimed: claimed, shared: shared, source: source)
                if case .refused(let refusal) = outcome, refusal.reason == .authContinue {
                    return answer(outcome)
                }
                helperConversations.removeValue(forKey: scheme)?.finish()
                answer(outcome)
            }
        }
    }

    private enum ClaimCheck {
        /// Go on; failures count against this name too (nil: the source only).
        case proceed(claimed: String?)
        case refuse(ProxyAuthOutcome)
    }

    /// An NTLM AUTHENTICATE names the account, as Basic does, whether it comes bare or inside
    /// a Negotiate token (SPNEGO): the lockout check runs before the helper or GSS-API sees
    /// it, and failures count (and are audited) against that name. One this relay cannot
    /// parse is refused rather than passed on, or a guess in it would go uncounted.
    private func checkClaim(in token: [UInt8], scheme: AuthConfig.Scheme) -> ClaimCheck {
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
    private static func settle(_ shared: ProxyAuthenticator, _ failure: ReasonCode?, user: String?,
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

    private func refusal(_ reason: ReasonCode, scheme: String? = nil) -> ProxyAuthOutcome {
        .refused(ProxyAuthRefusal(reason: reason, scheme: scheme, challenges: shared.challenges()))
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

    /// The decoded token of a Negotiate or NTLM handshake step (bounded as GSS-API's), or
    /// nil when it is missing, empty or not strict base64.
    private static func handshakeToken(_ authorization: ProxyAuthorization) -> [UInt8]? {
        guard let token = authorization.token68.flatMap({
            try? AuthCrypto.base64Decode($0, maxDecodedCount: GSSAcceptContext.maximumTokenSize)
        }), !token.isEmpty else { return nil }
        return token
    }

    /// What lockouts count failures against for a client at `address`: its IPv4 address,
    /// or its IPv6 /64 (`2001:db8:1:2::/64`). One host commonly holds a whole /64, and
    /// counting single IPv6 addresses would give it a fresh allowance of guesses per address.
    static func lockoutSource(of address: String) -> String {
        let host = host(of: address)
        // The same notion of a source as the connection limits count (`ClientSource`).
        guard let peer = SocketAddress(ip: host, port: 0) else { return host }
        return ClientSource(peer).description
    }

    /// `1.2.3.4:5678` → `1.2.3.4`; `[::1]:5678` → `::1`.
    /// `address` without its `:port` and an IPv6 literal without its brackets. Scans the
    /// UTF-8 bytes: it runs once per connection, and `Character` scanning cost most of a
    /// microsecond.
    static func host(of address: String) -> String {
        let utf8 = address.utf8
        guard let colon = utf8.lastIndex(of: UInt8(ascii: ":")) else { return address }
        var start = utf8.startIndex
        var end = colon
        if colon > start, utf8[start] == UInt8(ascii: "["), utf8[utf8.index(before: colon)] == UInt8(ascii: "]") {
            start = utf8.index(after: start)
            end = utf8.index(before: colon)
        }
        return String(address[start..<max(start, end)])
    }
}
