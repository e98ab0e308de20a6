/// A Basic helper's answer to `user password`.
public enum HelperVerdict: Sendable, Equatable {
    /// `OK`, with the notes the helper added (`user=`, `group=`, …), values unquoted.
    case ok(notes: [String: String])
    /// `ERR`: wrong password or unknown user; the helper's message when it gave one.
    case err(message: String?)
    /// `BH`, or the helper died, timed out, cannot start or answered nonsense: not the
    /// user's fault, so the caller should not count it as a failed login.
    case helperBroken(reason: String)
    /// Every helper channel is busy and the wait queue is full.
    case overloaded
    /// Refused before reaching the helper (a newline in a user name, an overlong password).
    case invalidInput(HelperInputError)
}

extension HelperVerdict {
    /// Reads a Basic answer: `OK`, `ERR`, `BH`; any other word means the helper is not a
    /// Basic helper (or is broken).
    public init(reply: HelperReply) {
        switch HelperLookup(reply: reply) {
        case .ok(let reply): self = .ok(notes: reply.notes)
        case .err(let message): self = .err(message: message)
        case .broken(let reason): self = .helperBroken(reason: reason)
        }
    }
}
