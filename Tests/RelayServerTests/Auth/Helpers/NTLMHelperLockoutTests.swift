import Dispatch
import Foundation
import Glibc
import RelayCore
import RelayIO
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
        let helper: ScriptedHelperAuth
        var shared: ProxyAuthenticator { helper.shared }

        init() throws {
            helper = try ScriptedHelperAuth(script: { log in
                """
                #!/bin/sh
                while read -r code rest; do
                    echo "$code" >> '\(log)'
                    case "$code" in
                        YR) echo "TT \(NTLMHelperLockoutTests.challenge)" ;;
                        *) echo "NA NT_STATUS_LOGON_FAILURE" ;;
                    esac
                done

                """
            }, authLines: { script in
                """
                auth ntlm
                auth-helper ntlm children=1 /bin/sh \(script)
                auth-lockout failures=3 source-failures=50
                """
            })
        }

        /// The requests the helper heard, by code (`YR`, `KK`).
        var heard: [String] { helper.heard }

        /// One handshake on a new connection: NEGOTIATE, then `authenticate`; the outcome of the last step.
        func attempt(_ authenticate: [UInt8]) throws -> ProxyAuthOutcome {
            let connection = ConnectionAuthenticator.bound(shared: shared, loop: SquidHelpers.loop, clientAddress: "10.0.0.9:4000")
            let first = try Self.run(connection, StatefulHelperTests.negotiate)
            guard case .refused(let refusal) = first, refusal.reason == .authContinue else { return first }
            return try Self.run(connection, authenticate)
        }

        static func run(_ connection: LoopBound<ConnectionAuthenticator>, _ token: [UInt8]) throws -> ProxyAuthOutcome {
            let request = ProxyAuthRequest(authorization: "NTLM " + AuthCrypto.base64Encode(token), method: "CONNECT", target: "app:443")
            let done = DispatchSemaphore(value: 0)
            let result = Mutex<ProxyAuthOutcome?>(nil)
            SquidHelpers.loop.execute {
                connection.value.authenticate(request) { outcome in
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

