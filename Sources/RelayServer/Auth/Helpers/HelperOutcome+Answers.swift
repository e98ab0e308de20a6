import RelayCore

// What each scheme makes of a request that got no reply: the pool's refusals and a broken
// helper become the answers' own cases; a reply is read by RelayCore.

/// A Basic or Digest lookup's answer: both meet a request that got no reply alike.
protocol HelperLookupAnswer {
    init(reply: HelperReply)
    static func helperBroken(reason: String) -> Self
    static var overloaded: Self { get }
}

extension HelperLookupAnswer {
    init(_ outcome: HelperProcess.Outcome) {
        switch outcome {
        case .reply(let reply): self.init(reply: reply)
        case .broken(let reason): self = .helperBroken(reason: reason)
        case .overloaded: self = .overloaded
        }
    }
}

extension HelperVerdict: HelperLookupAnswer {}
extension HelperDigestAnswer: HelperLookupAnswer {}

extension HelperTokenAnswer {
    init(_ outcome: HelperProcess.Outcome, scheme: AuthConfig.Scheme, maxTokenLength: Int) {
        switch outcome {
        case .reply(let reply): self.init(reply: reply, scheme: scheme, maxTokenLength: maxTokenLength)
        case .broken(let reason): self = .broken(reason: reason)
        case .overloaded: self = .broken(reason: "helper overloaded")
        }
    }
}
