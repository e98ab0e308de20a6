import Foundation
import Testing

/// Users and relays for the proxy-authentication tests.
enum AuthFixtures {
    static let user = "alice"
    // Spaces and a colon; no percent sign (curl -U decodes %XX) and ASCII only (curl builds
    // its NTLM hash by widening bytes, not from UTF-8).
    static let password = "wonder land:42"

    /// `dynrelay users add NAME --password-stdin --config CONFIG`, checked.
    static func addUser(_ name: String, password: String, config: String) throws {
        let result = try RelayBinary.run(["users", "add", name, "--password-stdin", "--config", config],
                                         input: .bytes(Array((password + "\n").utf8)))
        guard result.status == 0 else {
            throw HarnessError("users add \(name) exited \(result.status): \(result.stderr)")
        }
    }

    /// What `relay`'s trail records for the unknown user name `name`: its pseudonym, from
    /// `dynrelay audit pseudonym` (the name on standard input).
    static func pseudonym(of name: String, in relay: RelayProcess) throws -> String {
        let result = try RelayBinary.run(["audit", "pseudonym", "--config", relay.configPath],
                                         input: .bytes(Array((name + "\n").utf8)))
        guard result.status == 0 else { throw HarnessError("audit pseudonym exited \(result.status): \(result.stderr)") }
        return result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The principal an audit row of `reason` records for `user`: an unknown user's name
    /// only as its pseudonym.
    static func recorded(_ user: String, reason: String, in relay: RelayProcess) throws -> String {
        reason == "unknown-user" ? try pseudonym(of: user, in: relay) : user
    }

    /// A relay asking for `authLines`, with alice in its user store.
    static func relay(_ authLines: [String], servers: [String], environment: [String: String] = [:]) throws -> RelayProcess {
        try RelayProcess(config: RelayConfigText.proxy(authLines + servers), environment: environment) { config in
            try addUser(user, password: password, config: config)
        }
    }
}
