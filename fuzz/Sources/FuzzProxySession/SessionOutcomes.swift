import FuzzSupport
import RelayCore

/// The answers a script's bytes choose for the steps the session asked for.
enum SessionOutcomes {
    /// Addresses from the pool (0–3 of them), or nil for a failed resolution.
    static func resolverAnswer(_ input: inout FuzzInput) -> [IPAddress]? {
        let shape = input.byte() ?? 0
        guard shape % 5 != 4 else { return nil }
        return (0..<Int(shape % 5)).compactMap { _ in input.pick(SessionFixtures.answerPool) }
    }

    /// nil for a connection made, else why it failed.
    static func connectFailure(_ input: inout FuzzInput) -> ReasonCode? {
        let choice = Int(input.byte() ?? 0)
        return choice % 2 == 0 ? nil : SessionFixtures.connectFailures[(choice / 2) % SessionFixtures.connectFailures.count]
    }

    static func authOutcome(_ input: inout FuzzInput) -> ProxyAuthOutcome {
        let choice = Int(input.byte() ?? 0)
        let detail = choice >> 3
        if choice % 8 < SessionFixtures.scopes.count {
            return .granted(SessionFixtures.principals[detail % SessionFixtures.principals.count],
                            scope: SessionFixtures.scopes[choice % 8],
                            mutualAuth: choice & 0x80 != 0 ? "Negotiate oRQwEqADCgEA" : nil)
        }
        var refusal = ProxyAuthRefusal(reason: SessionFixtures.authRefusals[detail % SessionFixtures.authRefusals.count],
                                       claimedPrincipal: choice & 0x40 != 0 ? "mallory" : nil, scheme: "Basic",
                                       challenges: ["Basic realm=\"corp.example\""])
        refusal.claimedIsAccount = choice & 0x20 != 0
        return .refused(refusal)
    }
}
