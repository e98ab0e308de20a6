import Dispatch
import Foundation
import Glibc
import RelayCore
import Synchronization
import Testing
@testable import RelayServer

/// Basic through a helper under bursts: a browser's parallel connections with the same
/// credentials share one helper check, and distinct guesses sent all at once are checked
/// only up to the lockout. The helper is a script that logs each request, takes a moment,
/// and accepts only the password `right`.
@Suite struct BasicHelperBurstTests {
    final class Harness {
        let helper: ScriptedHelperAuth
        var shared: ProxyAuthenticator { helper.shared }

        init() throws {
            helper = try ScriptedHelperAuth(script: { log in
                """
                #!/bin/sh
                while read -r user password; do
                    echo "$user" >> '\(log)'
                    sleep 0.3
                    if [ "$password" = right ]; then echo OK; else echo ERR; fi
                done

                """
            }, authLines: { script in
                """
                auth basic
                auth-helper basic children=4 /bin/sh \(script)
                auth-lockout failures=3 source-failures=50
                """
            })
        }

        var heard: Int { helper.heard.count }

        /// `passwords[i]` for alice on its own connection from one address, all at once.
        func burst(_ passwords: [String]) -> [ProxyAuthOutcome] {
            helper.authenticateAtOnce(passwords.map { "Basic " + AuthCrypto.base64Encode(Array("alice:\($0)".utf8)) })
        }
    }

    @Test func parallelConnectionsWithTheSameCredentialsShareOneCheck() throws {
        let harness = try Harness()
        let outcomes = harness.burst(Array(repeating: "right", count: 8))
        #expect(outcomes.count == 8)
        #expect(outcomes.allSatisfy { refusalReason($0) == nil }, "\(outcomes)")
        #expect(harness.heard == 1)
    }

    @Test func distinctGuessesAtOnceAreCheckedOnlyUpToTheLockout() throws {
        let harness = try Harness()
        let outcomes = harness.burst((0..<8).map { "guess\($0)" })
        #expect(outcomes.count == 8)
        #expect(outcomes.filter { refusalReason($0) == .badPassword }.count == 3)
        #expect(outcomes.filter { refusalReason($0) == .tooManyAttempts }.count == 5)
        #expect(harness.heard == 3, "the helper heard only the guesses the allowance let through")
        #expect(refusalReason(harness.burst(["right"])[0]) == .lockedOut)
    }
}
