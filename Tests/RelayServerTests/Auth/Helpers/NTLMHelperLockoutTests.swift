import Dispatch
import Foundation
import Glibc
import RelayCore
import Synchronization
import Testing
@testable import RelayServer

/// An NTLM helper's refusals count against the account the client's AUTHENTICATE names, a
/// locked account is refused before the helper hears it, and an AUTHENTICATE dynrelay's
/// parser refuses never reaches the helper. The helper is a script speaking the Squid
/// protocol: a CHALLENGE for every YR, `NA NT_STATUS_LOGON_FAILURE` for every KK, and a
/// log of the requests it heard.
@Suite struct NTLMHelperLockoutTests {
    static let challenge = AuthCrypto.base64Encode(Array("NTLMSSP".utf8) + [0, 2, 0, 0, 0] + [UInt8](repeating: 0, count: 44))

    final class Harness {
        let directory: String
        let shared: ProxyAuthenticator
        let requestLog: String

        init() throws {
            var template = Array("/tmp/ntlm-helper-XXXXXX".utf8CString)
            guard let created = mkdtemp(&template) else { throw TestFailure("mkdtemp: errno \(errno)") }
            directory = String(cString: created)
            requestLog = directory + "/requests"
            let script = directory + "/helper.sh"
            let body = """
                #!/bin/sh
                while read -r code rest; do
                    echo "$code" >> '\(requestLog)'
                    case "$code" in
                        YR) echo "TT \(NTLMHelperLockoutTests.challenge)" ;;
                        *) echo "NA NT_STATUS_LOGON_FAILURE" ;;
                    esac
                done

                """
            guard FileManager.default.createFile(atPath: script, contents: Data(body.utf8)), chmod(script, 0o700) == 0 else {
                throw TestFailure("cannot write \(script)")
            }
            let config = try ConfigParser.parse(text: """
                listen 127.0.0.1:0
                auth ntlm
                auth-helper ntlm children=1 /bin/sh \(script)
                auth-lockout failures=3 source-failures=50
                """, file: "t.conf")
            let helpers = AuthHelpers(config.auth, loop: SquidHelpers.loop, log: SquidHelpers.quietLog)
            shared = ProxyAuthenticator(config: config.auth, store: nil, digestKey: Array(repeating: 7, count: 32),
                                        helpers: helpers, negotiate: nil)
        }

        deinit {
            shared.helpers.close()
            _ = try? FileManager.default.removeItem(atPath: directory)
        }

        /// The requests the helper heard, by code (`YR`, `KK`).
        var heard: [String] {
            ((try? String(contentsOfFile: requestLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        /// One handshake on a new connection: NEGOTIATE, then `authenticate`; the outcome of the last step.
        func attempt(_ authenticate: [UInt8]) throws -> ProxyAuthOutcome {
            let connection = ConnectionAuthenticator(shared: shared, loop: SquidHelpers.loop, clientAddress: "10.0.0.9:4000")
            let first = try Self.run(connection, StatefulHelperTests.negotiate)
            guard case .refused(let refusal) = first, refusal.reason == .authContinue else { return first }
            return try Self.run(connection, authenticate)
        }

        static func run(_ connection: ConnectionAuthenticator, _ token: [UInt8]) throws -> ProxyAuthOutcome {
            let request = ProxyAuthRequest(authorization: "NTLM " + AuthCrypto.base64Encode(token), method: "CONNECT", target: "app:443")
            let done = DispatchSemaphore(value: 0)
            let result = Mutex<ProxyAuthOutcome?>(nil)
            SquidHelpers.loop.execute {
                connection.authenticate(request) { outcome in
                    result.withLock { $0 = outcome }
                    done.signal()
                }
            }
            guard done.wait(timeout: .now() + 10) == .success else { throw TestFailure("no answer in 10 s") }
            return result.withLock { $0! }
        }
    }

    static func refusal(_ outcome: ProxyAuthOutcome) -> ProxyAuthRefusal? {
        if case .refused(let refusal) = outcome { return refusal }
        return nil
    }

    @Test func refusalsCountAgainstTheClaimedAccountUntilItIsLockedOut() throws {
        let harness = try Harness()
        for spelling in ["grace", "GRACE", "Grace"] {
            let refused = Self.refusal(try harness.attempt(StatefulHelperTests.authenticate(user: spelling, domain: "CORP")))
            #expect(refused?.reason == .badPassword && refused?.claimedPrincipal == spelling, "\(String(describing: refused))")
            #expect(refused?.detail == "NT_STATUS_LOGON_FAILURE")
        }
        let heardBefore = harness.heard.filter { $0 == "KK" }.count
        #expect(heardBefore == 3)
        let locked = Self.refusal(try harness.attempt(StatefulHelperTests.authenticate(user: "grace", domain: "OTHER")))
        #expect(locked?.reason == .lockedOut && locked?.claimedPrincipal == "grace")
        #expect(harness.heard.filter { $0 == "KK" }.count == heardBefore, "the helper never heard the locked account")
    }

    @Test func anAuthenticateTheParserRefusesNeverReachesTheHelper() throws {
        let harness = try Harness()
        var padded = StatefulHelperTests.authenticate(user: "grace", domain: "CORP")
        // NtChallengeResponse (descriptor at 20) grown past its 4 KiB bound, padding appended.
        let length = NTLMAuthenticateMessage.maxResponseLength + 1
        padded += [UInt8](repeating: 0, count: length)
        let offset = padded.count - length
        padded.replaceSubrange(20..<28, with: StatefulHelperTests.le16(length) + StatefulHelperTests.le16(length)
                                          + StatefulHelperTests.le32(UInt32(offset)))
        #expect(NTLMAuthenticateMessage.claim(in: padded) == .malformed)
        let refused = Self.refusal(try harness.attempt(padded))
        #expect(refused?.reason == .badCredentials)
        #expect(harness.heard == ["YR"], "only the NEGOTIATE reached the helper: \(harness.heard)")
    }
}

