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

    /// A relay asking for `authLines`, with alice in its user store.
    static func relay(_ authLines: [String], servers: [String], environment: [String: String] = [:]) throws -> RelayProcess {
        try RelayProcess(config: RelayConfigText.proxy(authLines + servers), environment: environment) { config in
            try addUser(user, password: password, config: config)
        }
    }
}
