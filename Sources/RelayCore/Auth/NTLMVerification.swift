/// The outcome of verifying an NTLM AUTHENTICATE message.
public enum NTLMVerification: Sendable, Equatable {
    /// The response proves `user` (in `domain`, as the client named it) knows the password.
    case ok(user: String, domain: String)
    /// Refused, for `reason`.
    case failed(reason: AuthFailureReason)
}
