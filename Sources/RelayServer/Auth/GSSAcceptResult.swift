/// What one `Negotiate` token did to a connection's handshake.
public enum GSSAcceptResult: Sendable, Equatable {
    /// The mechanism wants another round: send `outputToken` in a `407` with
    /// `Proxy-Authenticate: Negotiate <base64>` and wait for the client's next token.
    case continueNeeded(outputToken: [UInt8])
    /// The client proved it is `principal` (e.g. `alice@EXAMPLE.TEST`). A non-nil
    /// `outputToken` is the mutual-authentication reply, sent back as
    /// `Proxy-Authenticate: Negotiate <base64>` on the successful response.
    case complete(principal: String, outputToken: [UInt8]?)
    /// The token was refused; the error's description is fit for an audit reason.
    case failed(GSSError)
}
