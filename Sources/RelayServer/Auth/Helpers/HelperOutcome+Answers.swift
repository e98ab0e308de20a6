import RelayCore

// What each scheme makes of a request that got no reply: the pool's refusals and a broken
// helper become the answers' own cases; a reply is read by RelayCore.

extension HelperVerdict {
    init(_ outcome: HelperProcess.Outcome) {
        switch outcome {
        case .reply(let reply): self.init(reply: reply)
        case .broken(let reason): self = .helperBroken(reason: reason)
        case .overloaded: self = .overloaded
        }
    }
}

extension HelperDigestAnswer {
    init(_ outcome: HelperProcess.Outcome) {
        switch outcome {
        case .reply(let reply): self.init(reply: reply)
        case .broken(let reason): self = .helperBroken(reason: reason)
        case .overloaded: self = .overloaded
        }
    }
}

extension HelperTokenAnswer {
    init(_ outcome: HelperProcess.Outcome, scheme: AuthConfig.Scheme, maxTokenLength: Int) {
        switch outcome {
        case .reply(let reply): self.init(reply: reply, scheme: scheme, maxTokenLength: maxTokenLength)
        case .broken(let reason): self = .broken(reason: reason)
        case .overloaded: self = .broken(reason: "helper overloaded")
        }
    }
}
