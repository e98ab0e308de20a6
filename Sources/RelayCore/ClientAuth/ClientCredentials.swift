/// What a client may prove its identity with: a user name and password (Basic, Digest,
/// NTLM), a Kerberos ticket through a Negotiate initiator, or both.
///
/// The password never appears in `description`, and no error built from these
/// credentials carries it.
public struct ClientCredentials: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The user name. For NTLM, `DOMAIN\user` names the domain when `domain` is nil.
    public var user: String
    /// The password; nil when only Negotiate may answer.
    public var password: String?
    /// The NTLM domain; nil takes it from `DOMAIN\user`, else none.
    public var domain: String?
    /// Starts a Negotiate handshake for a host; nil when Negotiate is not to be tried.
    public var negotiate: NegotiateInitiatorFactory?

    /// Password credentials, optionally with a Negotiate initiator tried first.
    public init(user: String, password: String?, domain: String? = nil, negotiate: NegotiateInitiatorFactory? = nil) {
        self.user = user
        self.password = password
        self.domain = domain
        self.negotiate = negotiate
    }

    /// Kerberos only: Negotiate through `initiator`, no password to fall back on.
    public static func kerberos(_ initiator: @escaping NegotiateInitiatorFactory) -> ClientCredentials {
        ClientCredentials(user: "", password: nil, negotiate: initiator)
    }

    /// The NTLM user and domain: `domain` when set, else split from `DOMAIN\user`.
    var ntlmIdentity: (user: String, domain: String) {
        if let domain { return (user, domain) }
        if let slash = user.firstIndex(of: "\\") {
            return (String(user[user.index(after: slash)...]), String(user[..<slash]))
        }
        return (user, "")
    }

    /// The user and which kinds of proof are present; never the password.
    public var description: String {
        "ClientCredentials(user: \(user), password: \(password == nil ? "none" : "<redacted>"), "
            + "negotiate: \(negotiate == nil ? "no" : "yes"))"
    }

    /// Same as `description`.
    public var debugDescription: String { description }
}
