/// The outcome of a policy check, naming the rule (`file:line`) behind it.
public enum Decision: Equatable, Sendable {
    /// Allowed by the server rule at `rule`.
    case allow(rule: String)
    /// Refused; `rule` is the deny rule responsible, nil when no rule was (not registered,
    /// guarded address, ambiguous host).
    case deny(rule: String?, reason: ReasonCode)

    /// True for `.allow`.
    public var isAllowed: Bool {
        if case .allow = self { return true }
        return false
    }

    /// The rule named by the decision, if any (the audit `rule` column).
    public var rule: String? {
        switch self {
        case .allow(let rule): return rule
        case .deny(let rule, _): return rule
        }
    }

    /// `.allowed` or the refusal reason (the audit `reason` column).
    public var reason: ReasonCode {
        switch self {
        case .allow: return .allowed
        case .deny(_, let reason): return reason
        }
    }
}
