/// What an incremental head parser concluded about the bytes accumulated so far.
public enum HeadParseResult<Head> {
    /// No complete head yet and nothing wrong so far: read more and call again.
    case needMore
    /// A complete head occupies the first `headLength` bytes of the buffer; anything after
    /// them is body or the next message and has not been looked at.
    case complete(Head, headLength: Int)
    /// The bytes can never become a valid head; refuse with this code.
    case invalid(ReasonCode)
}

extension HeadParseResult: Equatable where Head: Equatable {}
extension HeadParseResult: Sendable where Head: Sendable {}
