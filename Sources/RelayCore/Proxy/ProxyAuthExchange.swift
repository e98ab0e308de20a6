/// Who a request is relayed for: the authenticated name and the scheme that proved it.
public struct AuthPrincipal: Equatable, Hashable, Sendable {
    /// The user name as the credential source knows it (`alice`, `alice@EXAMPLE.TEST`).
    public var name: String
    /// The scheme's wire name (`Basic`, `Digest`, `NTLM`, `Negotiate`).
    public var scheme: String

    public init(name: String, scheme: String) {
        self.name = name
        self.scheme = scheme
    }
}

/// What the session hands its driver to authenticate one request (`.authenticate`).
public struct ProxyAuthRequest: Equatable, Sendable {
    /// The `Proxy-Authorization` value, or nil when the request carried none.
    public var authorization: String?
    /// The method and request-target exactly as on the request line (Digest signs them).
    public var method: String
    public var target: String
    /// For an absolute-form request, its path and query: the Digest `uri` curl and other
    /// clients send to a proxy (RFC 7616 asks for the request-target; both name the same
    /// resource of the same request, so either is accepted, nothing else).
    public var originForm: String?

    public init(authorization: String?, method: String, target: String, originForm: String? = nil) {
        self.authorization = authorization
        self.method = method
        self.target = target
        self.originForm = originForm
    }
}

/// How far a successful authentication reaches.
public enum AuthScope: Equatable, Sendable {
    /// This request only (Digest: every request proves itself with a new nonce-count).
    case request
    /// Later requests on this connection with the very same `Proxy-Authorization` value
    /// (Basic: the slow password check runs once per connection).
    case sameCredentials
    /// The TCP connection (NTLM, Negotiate): later requests need no header at all.
    case connection
}

/// The driver's answer to `.authenticate`.
public enum ProxyAuthOutcome: Equatable, Sendable {
    /// Proven. `mutualAuth` is a `Proxy-Authenticate` value to return on the success
    /// response (Negotiate's mutual-authentication token), when the scheme has one.
    case granted(AuthPrincipal, scope: AuthScope, mutualAuth: String? = nil)
    /// Not proven: answered with `refusal.status` and, for 407, its challenges.
    case refused(ProxyAuthRefusal)
}

/// An authentication refusal: what the client gets and what the audit row records.
public struct ProxyAuthRefusal: Equatable, Sendable {
    /// The audited reason; its `refusalStatus` is the HTTP status.
    public var reason: ReasonCode
    /// Extra words for the audit row (GSS-API's status text), never a secret.
    public var detail: String?
    /// The user name the client claimed, if it named one: reviewers want to see which
    /// account was being tried.
    public var claimedPrincipal: String?
    /// The scheme the client tried.
    public var scheme: String?
    /// `Proxy-Authenticate` values for a 407, strongest first.
    public var challenges: [String]
    /// Whether `claimedPrincipal` is an account of the relay's own user store. Only such a
    /// name is recorded as it is: any other may be a password typed into the user-name
    /// field (an external helper cannot say which), and is recorded as a pseudonym.
    public var claimedIsAccount = false

    public init(reason: ReasonCode, detail: String? = nil, claimedPrincipal: String? = nil, scheme: String? = nil,
                challenges: [String] = []) {
        self.reason = reason
        self.detail = detail
        self.claimedPrincipal = claimedPrincipal
        self.scheme = scheme
        self.challenges = challenges
    }

    /// The status the client is answered with.
    public var status: Int { reason.refusalStatus ?? 407 }
}
