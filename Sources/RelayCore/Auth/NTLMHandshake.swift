/// The server side of one NTLM handshake, bound to one client connection:
/// `idle → challengeSent → authenticated | failed`.
///
/// Feed it each `Proxy-Authorization: NTLM <token>` the connection sends; it answers with
/// what to do. A NEGOTIATE starts (or restarts) the handshake with a fresh random server
/// challenge; an AUTHENTICATE is only meaningful after this connection was sent a
/// challenge, and anything out of order or malformed fails the handshake. `failed` is
/// final: the caller should close the connection. Owned by the connection's loop; a value
/// type, so it holds no lock.
public struct NTLMHandshake: Sendable {
    /// What the `ntlm` auth directive configures.
    public struct Configuration: Sendable {
        /// NetBIOS domain name sent as target name and MsvAvNbDomainName.
        public var domain: String
        /// NetBIOS computer name sent as MsvAvNbComputerName.
        public var computerName: String
        /// Whether NTLM2 session responses (NTLMv1 with ESS) are accepted beside NTLMv2.
        public var allowNTLM2SessionResponse: Bool

        /// A configuration; NTLM2 session responses are accepted by default.
        public init(domain: String, computerName: String, allowNTLM2SessionResponse: Bool = true) {
            self.domain = domain
            self.computerName = computerName
            self.allowNTLM2SessionResponse = allowNTLM2SessionResponse
        }
    }

    /// Where the handshake stands.
    public enum Phase: Sendable, Equatable {
        /// Nothing received yet.
        case idle
        /// A CHALLENGE was sent; an AUTHENTICATE is expected.
        case challengeSent
        /// The connection is authenticated as `user` in `domain`.
        case authenticated(user: String, domain: String)
        /// The handshake failed for `reason`.
        case failed(reason: AuthFailureReason)
    }

    /// What the caller does next.
    public enum Action: Sendable, Equatable {
        /// Answer `407` with `Proxy-Authenticate: NTLM <base64(message)>`, keeping the
        /// connection open for the AUTHENTICATE.
        case sendChallenge(message: [UInt8])
        /// The connection now belongs to `user`.
        case authenticated(user: String, domain: String)
        /// Refuse (and audit `reason`); `error` says what was malformed, if anything.
        case failed(reason: AuthFailureReason, error: AuthError?)
    }

    private enum State: Sendable {
        case idle
        /// Keeps the NEGOTIATE received and CHALLENGE sent for the MIC check.
        case challengeSent(serverChallenge: [UInt8], negotiate: [UInt8], challenge: [UInt8])
        case authenticated(user: String, domain: String)
        case failed(reason: AuthFailureReason)
    }

    /// Longest base64 token accepted (decoded bound: `NTLMAuthenticateMessage.maxLength`).
    public static let maxTokenLength = NTLMAuthenticateMessage.maxLength / 3 * 4 + 4

    private let configuration: Configuration
    private let challengeSource: @Sendable () -> [UInt8]
    private var state: State = .idle

    /// A handshake in `idle`. `challengeSource` returns 8 bytes per challenge; tests pass
    /// fixed ones, everyone else keeps OpenSSL's CSPRNG.
    public init(configuration: Configuration,
                challengeSource: @escaping @Sendable () -> [UInt8] = { AuthCrypto.randomBytes(count: 8) }) {
        precondition(NTLMWire.encodeUTF16LE(configuration.domain).count <= NTLMChallengeMessage.maxNameLength
            && NTLMWire.encodeUTF16LE(configuration.computerName).count <= NTLMChallengeMessage.maxNameLength,
            "NTLM domain and computer names are at most 256 UTF-16 units")
        self.configuration = configuration
        self.challengeSource = challengeSource
    }

    /// Where the handshake stands.
    public var phase: Phase {
        switch state {
        case .idle: .idle
        case .challengeSent: .challengeSent
        case .authenticated(let user, let domain): .authenticated(user: user, domain: domain)
        case .failed(let reason): .failed(reason: reason)
        }
    }

    /// Handles a parsed `Proxy-Authorization` value whose scheme is NTLM.
    public mutating func receive(_ authorization: ProxyAuthorization, unixTime: UInt64,
                                 ntHash: (_ user: String, _ domain: String) -> [UInt8]?) -> Action {
        if case .failed(let reason) = state { return .failed(reason: reason, error: nil) }
        guard authorization.hasScheme("NTLM"), let token = authorization.token68 else {
            return fail(.badRequest, .malformedHeader)
        }
        guard token.utf8.count <= Self.maxTokenLength else { return fail(.badRequest, .tooLarge) }
        let message: [UInt8]
        do {
            message = try AuthCrypto.base64Decode(token, maxDecodedCount: NTLMAuthenticateMessage.maxLength)
        } catch {
            return fail(.badRequest, error)
        }
        return receive(message: message, unixTime: unixTime, ntHash: ntHash)
    }

    /// Handles one decoded NTLM message. `unixTime` dates a new challenge; `ntHash`
    /// returns the stored NT hash for a user and domain, or nil for an unknown user.
    public mutating func receive(message: [UInt8], unixTime: UInt64,
                                 ntHash: (_ user: String, _ domain: String) -> [UInt8]?) -> Action {
        if case .failed(let reason) = state { return .failed(reason: reason, error: nil) }
        let type: UInt32
        do {
            type = try NTLMWire.messageType(message)
        } catch {
            return fail(.badRequest, error)
        }
        switch (NTLMWire.MessageType(rawValue: type), state) {
        case (.negotiate, _):
            // A restart (new NEGOTIATE after a challenge or a login) is how clients
            // re-authenticate a kept-alive connection; it always gets a fresh challenge.
            do {
                let negotiate = try NTLMNegotiateMessage(parsing: message)
                let serverChallenge = challengeSource()
                precondition(serverChallenge.count == 8, "NTLM challenge source must return 8 bytes")
                let challenge = NTLMChallengeMessage(answering: negotiate.flags, serverChallenge: serverChallenge,
                                                     domain: configuration.domain,
                                                     computerName: configuration.computerName, unixTime: unixTime)
                state = .challengeSent(serverChallenge: serverChallenge, negotiate: message, challenge: challenge.bytes)
                return .sendChallenge(message: challenge.bytes)
            } catch {
                return fail(.badRequest, error)
            }
        case (.authenticate, .challengeSent(let serverChallenge, let negotiate, let challenge)):
            let authenticate: NTLMAuthenticateMessage
            do {
                authenticate = try NTLMAuthenticateMessage(parsing: message)
            } catch {
                return fail(.badRequest, error)
            }
            switch NTLMVerifier.verify(authenticate, serverChallenge: serverChallenge,
                                       allowNTLM2SessionResponse: configuration.allowNTLM2SessionResponse,
                                       transcript: .init(negotiate: negotiate, challenge: challenge, authenticate: message),
                                       ntHash: ntHash) {
            case .ok(let user, let domain):
                state = .authenticated(user: user, domain: domain)
                return .authenticated(user: user, domain: domain)
            case .failed(let reason):
                return fail(reason, nil)
            }
        case (.authenticate, _):
            // No challenge outstanding on this connection: nothing this message can answer.
            return fail(.badRequest, .badMessageType)
        default:
            return fail(.badRequest, .badMessageType)
        }
    }

    private mutating func fail(_ reason: AuthFailureReason, _ error: AuthError?) -> Action {
        state = .failed(reason: reason)
        return .failed(reason: reason, error: error)
    }
}
