/// The client side of HTTP authentication for one connection and one peer (a proxy
/// answering `407`, or an origin answering `401`): picks the scheme to answer, builds each
/// `Proxy-Authorization`/`Authorization` value and steps through multi-leg schemes.
///
/// Feed `answer` the challenges of every `401`/`407`, and tell `accepted` when a response
/// to an answered request is anything else; `preemptive` then signs later requests
/// without a round trip where the scheme allows it (Digest, Basic). The session never
/// re-sends refused password credentials, and never falls back from a refused password
/// scheme to a weaker one (a wrong password sent as Digest must not then go out as
/// Basic): that is `loop`. A refused Negotiate falls back to the password schemes.
/// A value type owned by its connection; it holds no lock.
public struct ClientAuthSession: Sendable {
    /// Which peer the session authenticates to.
    public enum Peer: Sendable, Hashable {
        /// A proxy: `407`, `Proxy-Authenticate`, `Proxy-Authorization`.
        case proxy
        /// An origin server: `401`, `WWW-Authenticate`, `Authorization`.
        case server

        /// The request field the answer goes in.
        public var authorizationField: String { self == .proxy ? "Proxy-Authorization" : "Authorization" }
        /// The response field the challenges come in.
        public var challengeField: String { self == .proxy ? "Proxy-Authenticate" : "WWW-Authenticate" }
        /// The status that carries challenges.
        public var challengeStatus: Int { self == .proxy ? 407 : 401 }
    }

    /// Most consecutive `stale=true` re-answers, and most Negotiate legs: a peer that
    /// keeps asking past them is looping.
    static let maxStaleAnswers = 3
    static let maxNegotiateLegs = 8

    private enum State: Sendable {
        case idle
        case basic(value: String)
        case digest(DigestClientAnswer, staleAnswers: Int)
        case ntlmNegotiateSent(negotiate: [UInt8])
        case ntlmAuthenticateSent
        case negotiate(any NegotiateInitiator, mechanism: NegotiateMechanism, legs: Int)
        case failed(ClientAuthError)
    }

    private let credentials: ClientCredentials
    private let host: String
    private let entropy: ClientAuthEntropy
    /// The peer these answers go to: the relay (407) or the app server (401).
    public let peer: Peer
    private var state: State = .idle
    /// An answer is out and neither refused nor `accepted` yet.
    private var awaitingVerdict = false
    /// The answer out was `preemptive`, so a fresh challenge may mean only an expired nonce.
    private var preemptiveInFlight = false
    private var refusedNegotiate: Set<NegotiateMechanism> = []
    /// The peer turned down a Negotiate answer (not merely: no ticket to make one).
    private var negotiateRefusedByPeer = false

    /// A session answering `peer` at `host` (Negotiate's service is `HTTP@host`).
    public init(credentials: ClientCredentials, host: String, peer: Peer = .proxy, entropy: ClientAuthEntropy = .system) {
        self.credentials = credentials
        self.host = host
        self.peer = peer
        self.entropy = entropy
    }

    /// The scheme of the answer last built, if any.
    public var scheme: ClientAuthScheme? {
        switch state {
        case .idle, .failed: nil
        case .basic: .basic
        case .digest: .digest
        case .ntlmNegotiateSent, .ntlmAuthenticateSent: .ntlm
        case .negotiate: .negotiate
        }
    }

    /// `answer(_:method:target:)` over the raw challenge field values.
    public mutating func answer(headerValues: [String], method: String, target: String) throws(ClientAuthError) -> String? {
        try answer(AuthChallenge.parse(headerValues: headerValues), method: method, target: target)
    }

    /// The value of the authorization field for re-sending the request (`method`,
    /// `target` exactly as on the request line) that drew `challenges`; nil when the
    /// response carried none, so there is nothing to answer. Throws when nothing offered
    /// can be answered, or when answering again would repeat refused credentials.
    public mutating func answer(_ challenges: [AuthChallenge], method: String, target: String) throws(ClientAuthError) -> String? {
        if case .failed(let error) = state { throw error }
        guard !challenges.isEmpty else { return nil }
        do throws(ClientAuthError) {
            let value = try step(challenges, method: method, target: target)
            awaitingVerdict = true
            preemptiveInFlight = false
            return value
        } catch {
            state = .failed(error)
            throw error
        }
    }

    /// Tells the session the request answered last was not refused. `challenges` are those
    /// of that response (`headerValues`: its `Proxy-Authenticate` or `WWW-Authenticate`
    /// values): a Negotiate peer's final token there proves its identity (mutual
    /// authentication, RFC 4559 §5) and is checked; a token GSS-API rejects, or one that
    /// leaves the context unfinished, throws `mutual-auth-failed`, and the response must not
    /// be used. A success without a token is taken, as curl and browsers take it: the
    /// initiator asks for mutual authentication but a peer may skip the last leg, and a
    /// peer that could forge a success could as well have answered without a challenge.
    public mutating func accepted(headerValues: [String]) throws(ClientAuthError) {
        try accepted(AuthChallenge.parse(headerValues: headerValues))
    }

    /// `accepted(headerValues:)` on challenges already parsed.
    public mutating func accepted(_ challenges: [AuthChallenge] = []) throws(ClientAuthError) {
        awaitingVerdict = false
        preemptiveInFlight = false
        guard case .negotiate(let initiator, _, _) = state, !initiator.isComplete,
              let token = challenges.first(where: { $0.hasScheme("Negotiate") })?.token68
        else { return }
        do throws(ClientAuthError) {
            let input: [UInt8]
            do throws(ClientAuthError) {
                input = try Self.decode(token)
            } catch {
                throw .mutualAuthFailed("the final token is not base64")
            }
            do throws(ClientAuthError) {
                _ = try initiator.step(input)
            } catch {
                throw .mutualAuthFailed(error.detail ?? error.code)
            }
            guard initiator.isComplete else { throw .mutualAuthFailed("the final token left the context unfinished") }
        } catch {
            state = .failed(error)
            throw error
        }
    }

    /// The authorization field value for a new request on an accepted session without
    /// waiting to be challenged: the next nonce-count under the Digest nonce, or the same
    /// Basic credentials. Nil for connection-bound schemes (NTLM, Negotiate: the
    /// connection is already authenticated) and before any answer was accepted.
    public mutating func preemptive(method: String, target: String) -> String? {
        guard !awaitingVerdict else { return nil }
        switch state {
        case .basic(let value):
            awaitingVerdict = true
            preemptiveInFlight = true
            return value
        case .digest(var digest, _):
            guard let password = credentials.password,
                  let value = try? digest.next(user: credentials.user, password: password, method: method,
                                               target: target, cnonce: entropy.cnonce())
            else { return nil }
            state = .digest(digest, staleAnswers: 0)
            awaitingVerdict = true
            preemptiveInFlight = true
            return value
        default:
            return nil
        }
    }

    private mutating func step(_ challenges: [AuthChallenge], method: String, target: String) throws(ClientAuthError) -> String {
        guard awaitingVerdict else {
            state = .idle
            return try choose(challenges, method: method, target: target)
        }
        switch state {
        case .idle, .failed:
            return try choose(challenges, method: method, target: target)
        case .basic:
            if preemptiveInFlight { return try restart(challenges, method: method, target: target) }
            throw .loop
        case .digest(_, let staleAnswers):
            let offers = Self.digestOffers(challenges)
            if let stale = offers.usable.filter(\.stale).max(by: { $0.strength < $1.strength }) {
                guard staleAnswers < Self.maxStaleAnswers else { throw .loop }
                return try answerDigest(stale, staleAnswers: staleAnswers + 1, method: method, target: target)
            }
            if preemptiveInFlight { return try restart(challenges, method: method, target: target) }
            throw .loop
        case .ntlmNegotiateSent(let negotiate):
            guard let token = challenges.first(where: { $0.hasScheme("NTLM") })?.token68 else { throw .loop }
            return try answerNTLM(token, negotiate: negotiate)
        case .ntlmAuthenticateSent:
            throw .loop
        case .negotiate(let initiator, let mechanism, let legs):
            if let token = challenges.first(where: { $0.hasScheme("Negotiate") })?.token68, !initiator.isComplete {
                guard legs < Self.maxNegotiateLegs else { throw .loop }
                let output = try initiator.step(try Self.decode(token))
                if !output.isEmpty {
                    state = .negotiate(initiator, mechanism: mechanism, legs: legs + 1)
                    return "Negotiate " + AuthCrypto.base64Encode(output)
                }
            }
            // Refused with this mechanism: the next one, or the password schemes.
            refusedNegotiate.insert(mechanism)
            negotiateRefusedByPeer = true
            state = .idle
            return try choose(challenges, method: method, target: target)
        }
    }

    /// A preemptive answer was refused: its nonce or credentials went stale, not
    /// necessarily wrong, so one fresh answer is allowed.
    private mutating func restart(_ challenges: [AuthChallenge], method: String, target: String) throws(ClientAuthError) -> String {
        state = .idle
        return try choose(challenges, method: method, target: target)
    }

    private mutating func choose(_ challenges: [AuthChallenge], method: String, target: String) throws(ClientAuthError) -> String {
        var firstError: ClientAuthError?
        var offeredKnown = false
        for scheme in ClientAuthScheme.preference {
            let offered = challenges.filter { $0.hasScheme(scheme.rawValue) }
            guard !offered.isEmpty else { continue }
            offeredKnown = true
            switch scheme {
            case .negotiate:
                guard let factory = credentials.negotiate else { continue }
                for mechanism in NegotiateMechanism.allCases where !refusedNegotiate.contains(mechanism) {
                    do throws(ClientAuthError) {
                        let initiator = try factory(host, mechanism)
                        let token = try initiator.step(nil)
                        guard !token.isEmpty else { throw .negotiateFailed("empty first token") }
                        state = .negotiate(initiator, mechanism: mechanism, legs: 1)
                        return "Negotiate " + AuthCrypto.base64Encode(token)
                    } catch {
                        refusedNegotiate.insert(mechanism)
                        firstError = firstError ?? error
                    }
                }
            case .digest:
                guard credentials.password != nil else { continue }
                let offers = Self.digestOffers(offered)
                guard let best = offers.usable.max(by: { $0.strength < $1.strength }) else {
                    firstError = firstError ?? offers.firstError
                    continue
                }
                return try answerDigest(best, staleAnswers: 0, method: method, target: target)
            case .ntlm:
                guard let password = credentials.password, NTLMVerifier.ntHash(password: password) != nil else { continue }
                let negotiate = NTLMClientMessages.negotiate()
                state = .ntlmNegotiateSent(negotiate: negotiate)
                return "NTLM " + AuthCrypto.base64Encode(negotiate)
            case .basic:
                guard let password = credentials.password else { continue }
                let value = try Self.basic(user: credentials.user, password: password)
                state = .basic(value: value)
                return value
            }
        }
        if negotiateRefusedByPeer { throw .loop }
        if let firstError { throw firstError }
        throw offeredKnown ? .noCredentials : .unsupportedScheme
    }

    private static func digestOffers(_ challenges: [AuthChallenge]) -> (usable: [DigestClientChallenge], firstError: ClientAuthError?) {
        var usable: [DigestClientChallenge] = []
        var firstError: ClientAuthError?
        for challenge in challenges where challenge.hasScheme("Digest") {
            do throws(ClientAuthError) {
                usable.append(try DigestClientChallenge(challenge))
            } catch {
                firstError = firstError ?? error
            }
        }
        return (usable, firstError)
    }

    private mutating func answerDigest(_ challenge: DigestClientChallenge, staleAnswers: Int,
                                       method: String, target: String) throws(ClientAuthError) -> String {
        guard let password = credentials.password else { throw .noCredentials }
        var digest = DigestClientAnswer(challenge: challenge)
        guard let value = try digest.next(user: credentials.user, password: password, method: method, target: target,
                                          cnonce: entropy.cnonce())
        else { throw .loop }
        state = .digest(digest, staleAnswers: staleAnswers)
        return value
    }

    private mutating func answerNTLM(_ token: String, negotiate: [UInt8]) throws(ClientAuthError) -> String {
        let message: [UInt8]
        do throws(AuthError) {
            message = try AuthCrypto.base64Decode(token, maxDecodedCount: NTLMServerChallenge.maxLength)
        } catch {
            throw .badChallenge("NTLM \(error.code)")
        }
        let challenge = try NTLMServerChallenge(parsing: message)
        guard let password = credentials.password, let ntHash = NTLMVerifier.ntHash(password: password) else {
            throw .noCredentials
        }
        let (user, domain) = credentials.ntlmIdentity
        let response = NTLMClientMessages.v2Response(ntHash: ntHash, user: user, domain: domain, challenge: challenge,
                                                     clientChallenge: entropy.ntlmClientChallenge(),
                                                     fileTime: entropy.fileTime())
        let authenticate = try NTLMClientMessages.authenticate(negotiate: negotiate, challenge: challenge, user: user,
                                                               domain: domain, workstation: "", response: response)
        state = .ntlmAuthenticateSent
        return "NTLM " + AuthCrypto.base64Encode(authenticate)
    }

    /// `Basic base64(user ":" password)` in UTF-8 (RFC 7617 §2.1).
    static func basic(user: String, password: String) throws(ClientAuthError) -> String {
        guard !user.contains(":"), !AuthSyntax.containsControl(user) else { throw .badCredentials("user") }
        guard !AuthSyntax.containsControl(password) else { throw .badCredentials("password") }
        return "Basic " + AuthCrypto.base64Encode(Array("\(user):\(password)".utf8))
    }

    /// A Negotiate token from the peer, bounded like the acceptor bounds what it reads.
    private static func decode(_ token: String) throws(ClientAuthError) -> [UInt8] {
        do throws(AuthError) {
            return try AuthCrypto.base64Decode(token, maxDecodedCount: 64 * 1024)
        } catch {
            throw .badChallenge("Negotiate \(error.code)")
        }
    }
}
