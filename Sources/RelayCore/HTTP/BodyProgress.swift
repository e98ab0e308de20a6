/// What a `BodyFramer` found in the bytes it was given.
public enum BodyProgress: Equatable, Sendable {
    /// All these leading bytes belong to the message and more body is still to come
    /// (equal to the bytes given: a framer never holds bytes back).
    case body(Int)
    /// The message ends after this many leading bytes; the rest is the next message and was
    /// not looked at.
    case done(Int)
    /// The body can never be valid; stop relaying and close.
    case invalid(ReasonCode)
}
