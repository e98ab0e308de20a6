import Dispatch
import Glibc
import RelayCore
import RelayIO
import Synchronization
import Testing
@testable import RelayServer

/// The driver side of authentication: challenges, the verified-login cache, lockouts and
/// Digest, against a store that counts its slow checks.
@Suite struct ConnectionAuthenticatorTests {
    /// Users in memory; `verifyBasic` counts calls so tests can see the cache work.
    final class CountingStore: CredentialStore, @unchecked Sendable {
        let users = Mutex<[String: String]>(["alice": "wonderland"])
        let verifications = Atomic<Int>(0)
        /// Checks that have returned.
        let finished = Atomic<Int>(0)
        let version = Atomic<UInt64>(1)

        /// How long a password check takes, to let checks overlap.
        let checkMicros = Atomic<UInt32>(0)
        /// While set, a check waits for `release` before it answers.
        let hold = Atomic<Bool>(false)
        let release = DispatchSemaphore(value: 0)

        func verifyBasic(user: String, password: String) -> Bool? {
            verifications.add(1, ordering: .relaxed)
            defer { finished.add(1, ordering: .relaxed) }
            if hold.load(ordering: .relaxed) { release.wait() }
            let micros = checkMicros.load(ordering: .relaxed)
            if micros > 0 { usleep(micros) }
            guard let stored = users.withLock({ $0[user] }) else { return nil }
            return stored == password
        }
        func digestHA1(user: String, realm: String, algorithm: DigestAlgorithm) -> [UInt8]? {
            users.withLock { $0[user] }.map { algorithm.ha1(user: user, realm: realm, password: $0) }
        }
        func userForUserhash(_ userhash: String, realm: String, algorithm: DigestAlgorithm) -> String? { nil }
        func ntHash(user: String) -> (name: String, hash: [UInt8])? { nil }
        func hasAccount(_ user: String) -> Bool { users.withLock { $0[user] != nil } }
        var generation: UInt64 { version.load(ordering: .relaxed) }
    }

    static let group = EventLoopGroup(count: 1)

    static func authenticator(_ store: CountingStore, _ extra: String = "") throws -> ProxyAuthenticator {
        let config = try ConfigParser.parse(text: """
            listen 127.0.0.1:0
            auth basic realm=test
            auth digest realm=test
            auth-lockout failures=3 source-failures=6
            \(extra)
            """, file: "t.conf")
        return ProxyAuthenticator(config: config.auth, store: store, digestKey: Array(repeating: 7, count: 32),
                                  helpers: AuthHelpers(), negotiate: nil)
    }

    static func run(_ connection: LoopBound<ConnectionAuthenticator>, _ request: ProxyAuthRequest) -> ProxyAuthOutcome {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<ProxyAuthOutcome?>(nil)
        connection.authenticate(request) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    static func basic(_ user: String, _ password: String) -> ProxyAuthRequest {
        ProxyAuthRequest(authorization: "Basic " + AuthCrypto.base64Encode(Array("\(user):\(password)".utf8)),
                         method: "CONNECT", target: "app:443")
    }

    static func reason(_ outcome: ProxyAuthOutcome) -> ReasonCode? {
        if case .refused(let refusal) = outcome { return refusal.reason }
        return nil
    }

    /// Lockouts count the client's host: the port and an IPv6 literal's brackets go.
    @Test func theLockoutSourceIsTheClientHost() {
        #expect(ConnectionAuthenticator.host(of: "127.0.0.1:54321") == "127.0.0.1")
        #expect(ConnectionAuthenticator.host(of: "[::1]:8080") == "::1")
        #expect(ConnectionAuthenticator.host(of: "[fe80::1]:1") == "fe80::1")
        #expect(ConnectionAuthenticator.host(of: "no-port") == "no-port")
        #expect(ConnectionAuthenticator.host(of: ":5") == "")
        #expect(ConnectionAuthenticator.host(of: "[]:5") == "")
        #expect(ConnectionAuthenticator.host(of: "[:5") == "[")
    }

    /// An IPv6 client is counted by its /64, so the addresses of one host share one allowance.
    @Test func anIPv6SourceIsItsSlash64() throws {
        #expect(ConnectionAuthenticator.lockoutSource(of: "10.0.0.1:5") == "10.0.0.1")
        #expect(ConnectionAuthenticator.lockoutSource(of: "[2001:db8:1:2:aaaa::1]:5") == "2001:db8:1:2::/64")
        #expect(ConnectionAuthenticator.lockoutSource(of: "[2001:db8:1:2::ffff]:9") == "2001:db8:1:2::/64")
        #expect(ConnectionAuthenticator.lockoutSource(of: "[2001:db8:1:3::1]:9") == "2001:db8:1:3::/64")
        #expect(ConnectionAuthenticator.lockoutSource(of: "[::ffff:10.1.2.3]:5") == "10.1.2.3")
        #expect(ConnectionAuthenticator.lockoutSource(of: "[::1]:5") == "::/64")
        let shared = try Self.authenticator(CountingStore())
        for index in 0..<3 {
            let guesser = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0],
                                                  clientAddress: "[2001:db8:1:2::\(index + 1)]:4000")
            #expect(Self.reason(Self.run(guesser, Self.basic("alice", "guess"))) == .badPassword)
        }
        let sibling = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0], clientAddress: "[2001:db8:1:2::99]:4000")
        #expect(Self.reason(Self.run(sibling, Self.basic("alice", "wonderland"))) == .lockedOut,
                "another address of the same /64 is the same source")
    }

    @Test func noCredentialsGetEveryChallengeStrongestFirst() throws {
        let shared = try Self.authenticator(CountingStore())
        let connection = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0], clientAddress: "10.0.0.1:5000")
        guard case .refused(let refusal) = Self.run(connection, ProxyAuthRequest(authorization: nil, method: "CONNECT", target: "a:1")) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(refusal.reason == .authRequired)
        #expect(refusal.challenges.count == 3)
        #expect(refusal.challenges[0].hasPrefix("Digest realm=\"test\", qop=\"auth\", algorithm=SHA-256"))
        #expect(refusal.challenges[1].hasPrefix("Digest realm=\"test\", qop=\"auth\", algorithm=MD5"))
        #expect(refusal.challenges[2] == "Basic realm=\"test\", charset=\"UTF-8\"")
    }

    @Test func aBurstOfLoginsWithTheSameCredentialsRunsOneCheckAndAllGetItsAnswer() throws {
        let store = CountingStore()
        store.checkMicros.store(300_000, ordering: .relaxed)
        let shared = try Self.authenticator(store)
        // The right password comes from other addresses: the wrong one locks alice out
        // for the addresses it came from.
        for (subnet, password, expected) in [(1, "wrong", ReasonCode.badPassword), (2, "wonderland", nil)] {
            let before = store.verifications.load(ordering: .relaxed)
            let outcomes = Mutex<[ProxyAuthOutcome]>([])
            let done = DispatchGroup()
            for index in 0..<8 {
                done.enter()
                let connection = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0],
                                                         clientAddress: "10.0.\(subnet).\(index):5000")
                connection.authenticate(Self.basic("alice", password)) { outcome in
                    outcomes.withLock { $0.append(outcome) }
                    done.leave()
                }
            }
            #expect(done.wait(timeout: .now() + 10) == .success)
            #expect(store.verifications.load(ordering: .relaxed) - before == 1, "one KDF for the whole burst")
            let results = outcomes.withLock { $0 }
            #expect(results.count == 8)
            #expect(results.allSatisfy { Self.reason($0) == expected })
        }
    }

    /// Guesses sent all at once, each on its own connection, before any check has failed:
    /// only as many are checked as the account has failures left from that source; the
    /// rest are refused at once, uncounted, and the account is locked after those fail.
    @Test func aBurstOfDistinctGuessesIsCheckedOnlyUpToTheLockout() throws {
        let store = CountingStore()
        store.hold.store(true, ordering: .relaxed)
        let shared = try Self.authenticator(store)
        let outcomes = Mutex<[ProxyAuthOutcome]>([])
        let done = DispatchGroup()
        for guess in 0..<12 {
            done.enter()
            let connection = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0], clientAddress: "10.6.6.6:\(guess)")
            connection.authenticate(Self.basic("alice", "guess\(guess)")) { outcome in
                outcomes.withLock { $0.append(outcome) }
                done.leave()
            }
        }
        #expect(eventually { outcomes.withLock { $0.count } == 9 }, "nine refused while three checks run")
        #expect(outcomes.withLock { $0 }.allSatisfy { Self.reason($0) == .tooManyAttempts })
        store.hold.store(false, ordering: .relaxed)
        for _ in 0..<3 { store.release.signal() }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(store.verifications.load(ordering: .relaxed) == 3)
        #expect(outcomes.withLock { $0 }.filter { Self.reason($0) == .badPassword }.count == 3)
        let late = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0], clientAddress: "10.6.6.6:99")
        #expect(Self.reason(Self.run(late, Self.basic("alice", "wonderland"))) == .lockedOut)
    }

    @Test func aProvenBasicLoginSkipsTheKDFOnTheNextConnectionUntilTheStoreChanges() throws {
        let store = CountingStore()
        let shared = try Self.authenticator(store)
        for _ in 0..<3 {
            let connection = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0], clientAddress: "10.0.0.1:5000")
            #expect(Self.run(connection, Self.basic("alice", "wonderland")) == .granted(AuthPrincipal(name: "alice", scheme: "Basic"), scope: .sameCredentials))
        }
        #expect(store.verifications.load(ordering: .relaxed) == 1)
        store.users.withLock { $0["alice"] = "changed" }
        store.version.add(1, ordering: .relaxed)
        let connection = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0], clientAddress: "10.0.0.1:5000")
        #expect(Self.reason(Self.run(connection, Self.basic("alice", "wonderland"))) == .badPassword,
                "an old password stops working as soon as the store changes")
    }

    /// In the last fifth of a proof's life a login is granted at once and renews the proof
    /// in the background: granted while the renewing check is still blocked, and the
    /// renewed proof carries a login past the first proof's end. A renewal that finds the
    /// password wrong forgets the proof.
    @Test func aProofNearItsEndIsRenewedWithoutMakingTheLoginWait() throws {
        let store = CountingStore()
        let now = Atomic<UInt64>(1_000_000_000)
        let config = try ConfigParser.parse(text: "listen 127.0.0.1:0\nauth basic realm=test\nauth-cache-ttl 10s\n", file: "t.conf")
        let shared = ProxyAuthenticator(config: config.auth, store: store, digestKey: Array(repeating: 7, count: 32),
                                        helpers: AuthHelpers(), negotiate: nil, clock: { now.load(ordering: .relaxed) })
        let login = { (password: String) -> ProxyAuthOutcome? in
            let connection = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0], clientAddress: "10.0.0.1:5000")
            let done = DispatchSemaphore(value: 0)
            let result = Mutex<ProxyAuthOutcome?>(nil)
            connection.authenticate(Self.basic("alice", password)) { outcome in
                result.withLock { $0 = outcome }
                done.signal()
            }
            return done.wait(timeout: .now() + 10) == .success ? result.withLock { $0 } : nil
        }
        let granted = ProxyAuthOutcome.granted(AuthPrincipal(name: "alice", scheme: "Basic"), scope: .sameCredentials)
        #expect(login("wonderland") == granted)
        #expect(store.finished.load(ordering: .relaxed) == 1)

        now.add(9_000_000_000, ordering: .relaxed)  // 1 s before the proof's end
        store.hold.store(true, ordering: .relaxed)
        #expect(login("wonderland") == granted, "granted while the renewing check is held")
        #expect(eventually { store.verifications.load(ordering: .relaxed) == 2 }, "one renewal started")
        store.hold.store(false, ordering: .relaxed)
        store.release.signal()
        #expect(eventually { store.finished.load(ordering: .relaxed) == 2 })

        now.add(5_000_000_000, ordering: .relaxed)  // past the first proof's end
        #expect(login("wonderland") == granted)
        #expect(store.verifications.load(ordering: .relaxed) == 2, "the renewed proof was used")

        // The password changes without the store saying so: the renewal finds it wrong and
        // forgets the proof, so the old password is checked, and refused, on the next login.
        store.users.withLock { $0["alice"] = "changed" }
        now.add(3_500_000_000, ordering: .relaxed)  // into the renewed proof's last fifth (18–20 s)
        #expect(login("wonderland") == granted)
        #expect(eventually { store.finished.load(ordering: .relaxed) == 3 })
        #expect(login("wonderland").map(Self.reason) == .badPassword)
    }

    @Test func wrongPasswordsLockTheSourceForThatUserOnly() throws {
        let shared = try Self.authenticator(CountingStore())
        let attacker = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0], clientAddress: "10.6.6.6:1")
        #expect(Self.reason(Self.run(attacker, Self.basic("mallory", "x"))) == .unknownUser)
        for _ in 0..<3 {
            #expect(Self.reason(Self.run(attacker, Self.basic("alice", "guess"))) == .badPassword)
        }
        #expect(Self.reason(Self.run(attacker, Self.basic("alice", "wonderland"))) == .lockedOut,
                "the right password from the guessing source is refused while locked")
        let owner = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0], clientAddress: "10.0.0.9:1")
        #expect(Self.run(owner, Self.basic("alice", "wonderland")) == .granted(AuthPrincipal(name: "alice", scheme: "Basic"), scope: .sameCredentials),
                "alice from her own address does not pay for the attacker's failures")
    }

    /// A name no account has may be a password typed in the wrong field: its failures count
    /// against the source only, so no `locked-out` refusal ever carries that name.
    /// Only a claimed name the user store holds is marked an account, whatever the reason.
    @Test func refusalsMarkOnlyStoreAccountsAsAccounts() throws {
        let shared = try Self.authenticator(CountingStore())
        let client = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0], clientAddress: "10.8.8.8:1")
        for (user, isAccount) in [("alice", true), ("hunter2", false)] {
            guard case .refused(let refusal) = Self.run(client, Self.basic(user, "wrong")) else {
                Issue.record("\(user) was not refused")
                continue
            }
            #expect(refusal.claimedPrincipal == user)
            #expect(refusal.claimedIsAccount == isAccount, "\(user)")
        }
    }

    @Test func unknownNamesCountAgainstTheirSourceOnly() throws {
        let shared = try Self.authenticator(CountingStore())
        let typo = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0], clientAddress: "10.7.7.7:1")
        for _ in 0..<5 {
            #expect(Self.reason(Self.run(typo, Self.basic("hunter2", "x"))) == .unknownUser, "never locked-out by that name")
        }
        // The source's own allowance (6) still ends the guessing.
        #expect(Self.reason(Self.run(typo, Self.basic("hunter2", "x"))) == .unknownUser)
        #expect(Self.reason(Self.run(typo, Self.basic("alice", "wonderland"))) == .lockedOut)
    }

    @Test func digestRoundTripThenReplayIsRefused() throws {
        let shared = try Self.authenticator(CountingStore())
        let connection = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0], clientAddress: "10.0.0.1:5000")
        guard case .refused(let refusal) = Self.run(connection, ProxyAuthRequest(authorization: nil, method: "CONNECT", target: "app:443")),
              let challenge = refusal.challenges.first,
              let nonce = Self.parameter("nonce", in: challenge), let opaque = Self.parameter("opaque", in: challenge) else {
            Issue.record("no challenge")
            return
        }
        let algorithm = DigestAlgorithm.sha256
        let ha1 = algorithm.ha1(user: "alice", realm: "test", password: "wonderland").map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        let ha2 = algorithm.hexHash("CONNECT:app:443")
        let response = algorithm.hexHash("\(ha1):\(nonce):00000001:abcdef:auth:\(ha2)")
        let header = "Digest username=\"alice\", realm=\"test\", nonce=\"\(nonce)\", uri=\"app:443\", algorithm=SHA-256, "
            + "response=\"\(response)\", qop=auth, nc=00000001, cnonce=\"abcdef\", opaque=\"\(opaque)\""
        let request = ProxyAuthRequest(authorization: header, method: "CONNECT", target: "app:443")
        #expect(Self.run(connection, request) == .granted(AuthPrincipal(name: "alice", scheme: "Digest"), scope: .request))
        #expect(Self.reason(Self.run(connection, request)) == .replayedNonce)
        let otherTarget = ProxyAuthRequest(authorization: header, method: "CONNECT", target: "elsewhere:443")
        #expect(Self.reason(Self.run(connection, otherTarget)) == .badCredentials, "uri must match the request target")
    }

    @Test func unknownSchemesAndGarbageAreRefusedCleanly() throws {
        let shared = try Self.authenticator(CountingStore())
        let connection = ConnectionAuthenticator.bound(shared: shared, loop: Self.group.loops[0], clientAddress: "10.0.0.1:5000")
        let cases: [(String, ReasonCode)] = [
            ("Bearer abc", .unsupportedAuth),
            ("NTLM TlRMTVNTUAABAAAA", .unsupportedAuth),
            ("Basic !!!!", .badCredentials),
            ("Basic " + String(repeating: "QUFB", count: 5000), .badCredentials),
            ("Basic " + AuthCrypto.base64Encode([0x61, 0xff, 0x3a, 0x62]), .badCredentials),
            ("Basic " + AuthCrypto.base64Encode(Array("nocolon".utf8)), .badCredentials),
            ("Digest username=\"a\", username=\"b\"", .badCredentials),
            ("Digest realm=\"test\"", .badCredentials),
            ("", .badCredentials),
        ]
        for (header, expected) in cases {
            let outcome = Self.run(connection, ProxyAuthRequest(authorization: header, method: "CONNECT", target: "a:1"))
            #expect(Self.reason(outcome) == expected, "\(header.prefix(40)) → \(outcome)")
        }
    }

    static func parameter(_ name: String, in challenge: String) -> String? {
        guard let range = challenge.range(of: "\(name)=\"") else { return nil }
        let rest = challenge[range.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }
}
