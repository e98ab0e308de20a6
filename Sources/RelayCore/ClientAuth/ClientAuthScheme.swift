/// The schemes a client answers, strongest first in `preference`.
public enum ClientAuthScheme: String, Sendable, Hashable, CaseIterable {
    /// RFC 4559, Kerberos v5 through a `NegotiateInitiator`.
    case negotiate = "Negotiate"
    /// RFC 7616, SHA-256 before MD5.
    case digest = "Digest"
    /// NTLMv2 (MS-NLMP).
    case ntlm = "NTLM"
    /// RFC 7617: the password in the clear, so only when nothing stronger is offered.
    case basic = "Basic"

    /// The order the session tries offered schemes in.
    public static let preference: [ClientAuthScheme] = [.negotiate, .digest, .ntlm, .basic]
}
