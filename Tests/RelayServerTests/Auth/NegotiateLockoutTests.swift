import Dispatch
import KerberosTestSupport
import RelayCore
import RelayIO
import Synchronization
import Testing
@testable import RelayServer

extension GSSAcceptorTests {
    /// Samba's SPNEGO client answering a challenge for `grace` (`ntlm_auth
    /// --helper-protocol=gss-spnego-client`): a NegTokenResp around an NTLM AUTHENTICATE.
    static let sambaSPNEGOAuthenticate = "oYIBTjCCAUqiggFGBIIBQk5UTE1TU1AAAwAAABgAGABYAAAAoACgAHAAAAAYABgAEAEAAAoACgAoAQAAAAAAADIBAAAQABAAMgEAAAWCCGIGAQAAAAAAD9v0ZSRfy5z86QFrZKLrVCIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABUWgR9X4aB+adqYdUP8i4mAQEAAAAAAAD06dagmYHdAbI3DySrYK8RAAAAAAIABABWAE0AAQAEAFYATQAEAAAAAwAEAHYAbQAHAAgA9OnWoJmB3QEIADAAMAAAAAAAAAAAAAAAAAAAACvn9QkYiGFjFebJqjwVrGcadykNquKnJ/F+tTkwO1rHCgAQAAAAAAAAAAAAAAAAAAAAAAAAAAAARABZAE4AUgBFAEwAQQBZAFQARQBTAFQAZwByAGEAYwBlAKG0WBt6VM4KeG9JJrLcA24="

    /// The built-in acceptor has no NTLM mechanism (MIT GSS-API without gss-ntlmssp), so NTLM
    /// inside SPNEGO fails there: the failures still count against the account it names, as
    /// a helper's would, and a Kerberos login by someone else from one of those sources is untouched.
    @Test func ntlmInsideSPNEGOCountsAgainstTheNamedAccount() throws {
        let kdc = try KerberosRealmTrait.realm()
        let config = try ConfigParser.parse(text: """
            listen 127.0.0.1:0
            auth negotiate keytab=\(kdc.keytabPath)
            auth-lockout failures=3 source-failures=100
            """, file: "t.conf")
        let shared = ProxyAuthenticator(config: config.auth, store: nil, digestKey: Array(repeating: 7, count: 32),
                                        helpers: AuthHelpers(), negotiate: try Self.credential(kdc))
        let group = EventLoopGroup(count: 1)
        func run(_ connection: LoopBound<ConnectionAuthenticator>, _ token: String) -> ProxyAuthOutcome {
            let done = DispatchSemaphore(value: 0)
            let result = Mutex<ProxyAuthOutcome?>(nil)
            connection.authenticate(ProxyAuthRequest(authorization: "Negotiate " + token, method: "CONNECT", target: "app:443")) {
                outcome in
                result.withLock { $0 = outcome }
                done.signal()
            }
            done.wait()
            return result.withLock { $0! }
        }
        func refusal(_ outcome: ProxyAuthOutcome) -> (ReasonCode, String?)? {
            guard case .refused(let refusal) = outcome else { return nil }
            return (refusal.reason, refusal.claimedPrincipal)
        }

        for source in ["10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1"] {
            let guesser = ConnectionAuthenticator.bound(shared: shared, loop: group.loops[0], clientAddress: source)
            let answer = refusal(run(guesser, Self.sambaSPNEGOAuthenticate))
            #expect(answer?.0 == .gssError && answer?.1 == "grace", "\(String(describing: answer))")
        }
        // Three sources, one account: each of them is now locked out of it (LockoutTracker).
        let again = ConnectionAuthenticator.bound(shared: shared, loop: group.loops[0], clientAddress: "10.0.0.3:2")
        let locked = refusal(run(again, Self.sambaSPNEGOAuthenticate))
        #expect(locked?.0 == .lockedOut && locked?.1 == "grace", "\(String(describing: locked))")

        let (_, kerberos) = try Self.firstToken(kdc)
        let alice = ConnectionAuthenticator.bound(shared: shared, loop: group.loops[0], clientAddress: "10.0.0.1:2")
        guard case .granted(let principal, _, _) = run(alice, AuthCrypto.base64Encode(kerberos)) else {
            Issue.record("alice's Kerberos login was refused")
            return
        }
        #expect(principal.name == TestKDC.userPrincipal)
    }
}
