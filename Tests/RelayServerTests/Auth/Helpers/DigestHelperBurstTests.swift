import Dispatch
import Foundation
import RelayCore
import Synchronization
import Testing
@testable import RelayServer

/// Digest through a helper under bursts: a browser's parallel requests on one nonce share
/// one HA1 lookup (and their counts may arrive out of order), while lookups of distinct
/// names from one address are held to its allowance, so they cannot fill the helper's
/// queue for everyone. The helper is a script that logs each lookup, takes a moment, and
/// knows only alice.
@Suite struct DigestHelperBurstTests {
    static let realm = "it"
    static let password = "wonderland"

    static func helper() throws -> ScriptedHelperAuth {
        let ha1 = HexText.hex(DigestAlgorithm.md5.ha1(user: "alice", realm: realm, password: password))
        return try ScriptedHelperAuth(script: { log in
            """
            #!/bin/sh
            while read -r line; do
                echo "$line" >> '\(log)'
                sleep 0.3
                case "$line" in
                    '"alice":"\(realm)"') echo "OK ha1=\(ha1)" ;;
                    *) echo "ERR" ;;
                esac
            done

            """
        }, authLines: { script in
            """
            auth digest realm=\(realm) algorithm=MD5
            auth-helper digest children=4 /bin/sh \(script)
            auth-lockout failures=3 source-failures=4
            """
        })
    }

    /// `user`'s requests, one per connection from one address, all at once; `nc` 1…count in
    /// reverse order of sending, on the nonce of one challenge.
    static func burst(_ helper: ScriptedHelperAuth, users: [String]) throws -> [ProxyAuthOutcome] {
        let shared = helper.shared
        let challengeConnection = ConnectionAuthenticator.bound(shared: shared, loop: SquidHelpers.loop, clientAddress: "10.0.0.9:1")
        let challenge = Mutex<String?>(nil)
        let got = DispatchSemaphore(value: 0)
        SquidHelpers.loop.execute {
            challengeConnection.value.authenticate(ProxyAuthRequest(authorization: nil, method: "CONNECT", target: "app:443")) { outcome in
                if case .refused(let refusal) = outcome { challenge.withLock { $0 = refusal.challenges.first } }
                got.signal()
            }
        }
        _ = got.wait(timeout: .now() + 10)
        let header = try #require(challenge.withLock { $0 })
        let nonce = try #require(ConnectionAuthenticatorTests.parameter("nonce", in: header))
        let opaque = try #require(ConnectionAuthenticatorTests.parameter("opaque", in: header))
        let md5 = DigestAlgorithm.md5
        // Sent in reverse, so the counts arrive out of order.
        let authorizations = users.enumerated().reversed().map { index, user in
            let nc = String(format: "%08x", index + 1)
            let ha1 = HexText.hex(md5.ha1(user: user, realm: realm, password: password))
            let response = md5.hexHash("\(ha1):\(nonce):\(nc):c\(index):auth:\(md5.hexHash("CONNECT:app:443"))")
            return "Digest username=\"\(user)\", realm=\"\(realm)\", nonce=\"\(nonce)\", uri=\"app:443\", "
                + "algorithm=MD5, response=\"\(response)\", qop=auth, nc=\(nc), cnonce=\"c\(index)\", opaque=\"\(opaque)\""
        }
        return helper.authenticateAtOnce(authorizations)
    }

    @Test func parallelRequestsOnOneNonceShareOneLookupAndAllPass() throws {
        let helper = try Self.helper()
        let outcomes = try Self.burst(helper, users: Array(repeating: "alice", count: 6))
        #expect(outcomes.count == 6)
        #expect(outcomes.allSatisfy { refusalReason($0) == nil }, "\(outcomes)")
        #expect(helper.heard.count == 1)
    }

    @Test func distinctNamesAtOnceAreLookedUpOnlyUpToTheAllowance() throws {
        let helper = try Self.helper()
        let outcomes = try Self.burst(helper, users: (0..<8).map { "made-up-\($0)" })
        #expect(outcomes.count == 8)
        #expect(outcomes.filter { refusalReason($0) == .unknownUser }.count == 4, "\(outcomes)")
        #expect(outcomes.filter { refusalReason($0) == .tooManyAttempts }.count == 4)
        #expect(helper.heard.count == 4, "the helper heard only what the address's allowance let through")
    }
}

/// Lowercase hex, as Digest writes hashes.
enum HexText {
    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}
