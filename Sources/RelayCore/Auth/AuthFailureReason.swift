/// The reason an authentication attempt failed, as it appears in the audit trail, refusal
/// bodies and logs.
///
/// Raw values are stable once shipped. They sit beside `ReasonCode` (which the integrating
/// layer extends with the same strings) so that the auth core does not depend on how
/// refusals are rendered.
public struct AuthFailureReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The stable string, e.g. `bad-password`.
    public let rawValue: String

    /// Wraps a stable reason string.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The user exists but the proof of the password is wrong.
    public static let badPassword = AuthFailureReason(rawValue: "bad-password")
    /// No such user (or the credential store has no verifier of the needed kind for it).
    public static let unknownUser = AuthFailureReason(rawValue: "unknown-user")
    /// A Digest nonce that expired, was never issued here, or was forgotten; the client
    /// may retry with a fresh one (`stale=true`).
    public static let staleNonce = AuthFailureReason(rawValue: "stale-nonce")
    /// A Digest nonce-count that did not increase: a replayed request.
    public static let replayedNonce = AuthFailureReason(rawValue: "replayed-nonce")
    /// Malformed or inconsistent credentials, or a message out of protocol order.
    public static let badRequest = AuthFailureReason(rawValue: "bad-request")
    /// A scheme or variant this relay refuses by policy (e.g. plain NTLMv1, LM).
    public static let unsupported = AuthFailureReason(rawValue: "unsupported-auth")
    /// The credential store returned something unusable (e.g. an HA1 of the wrong
    /// length), or a required OpenSSL algorithm is missing.
    public static let internalError = AuthFailureReason(rawValue: "internal-error")

    /// The raw value.
    public var description: String { rawValue }
}
