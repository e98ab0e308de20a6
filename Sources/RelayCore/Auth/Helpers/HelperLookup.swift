/// A stateless (Basic, Digest) helper's answer reduced to what both schemes share: `OK`
/// with its reply, `ERR` with its message, and every other word as a broken helper.
public enum HelperLookup: Sendable, Equatable {
    /// `OK`, with the whole reply for the scheme to read its notes.
    case ok(HelperReply)
    /// `ERR`: the lookup failed; the helper's message when it gave one.
    case err(message: String?)
    /// `BH`, or a result word a lookup helper never sends; the reason is for logs.
    case broken(String)

    /// Reads `reply` as the answer to a Basic or Digest lookup.
    public init(reply: HelperReply) {
        switch reply.code {
        case "OK": self = .ok(reply)
        case "ERR": self = .err(message: reply.message)
        case "BH": self = .broken("BH \(reply.message ?? "")")
        default: self = .broken("unexpected answer \(reply.code)")
        }
    }
}
