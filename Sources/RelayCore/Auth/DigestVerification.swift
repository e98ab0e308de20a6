/// The outcome of verifying Digest credentials.
public enum DigestVerification: Sendable, Equatable {
    /// The response proves `user` knows the password, with a fresh nonce and count.
    case ok(user: String)
    /// The response is right but the nonce expired or is no longer tracked: answer with a
    /// new challenge carrying `stale=true`, and the client retries without prompting.
    case stale
    /// Refused, for `reason`.
    case failed(reason: AuthFailureReason)

    /// What the audit trail records: nil for `.ok`, `stale-nonce` for `.stale`.
    public var failureReason: AuthFailureReason? {
        switch self {
        case .ok: nil
        case .stale: .staleNonce
        case .failed(let reason): reason
        }
    }
}
