import Synchronization
import Testing
@testable import RelayCore

/// The HA1 a client proved with a nonce is reused only for that nonce, user, algorithm and
/// credentials version, and only while the nonce is fresh; every decision stays the same.
@Suite struct DigestProvenHA1Tests {
    typealias Fixture = AuthDigestTests

    /// Counts the store lookups an authenticator makes.
    final class CountingStore: Sendable {
        let lookups = Atomic<Int>(0)
        let passwords = Mutex(Fixture.passwords)

        func ha1(_ user: String, _ realm: String, _ algorithm: DigestAlgorithm) -> [UInt8]? {
            lookups.wrappingAdd(1, ordering: .relaxed)
            return passwords.withLock { $0[user] }.map { algorithm.ha1(user: user, realm: realm, password: $0) }
        }

        var count: Int { lookups.load(ordering: .relaxed) }
    }

    static func verify(_ authenticator: DigestAuthenticator, _ authorization: ProxyAuthorization, store: CountingStore,
                       version: UInt64? = 1, now: UInt64 = Fixture.t0) -> DigestVerification {
        authenticator.verify(authorization, method: "GET", requestTarget: "/dir/index.html", now: now,
                             credentialsVersion: version, ha1: store.ha1)
    }

    @Test(arguments: [DigestAlgorithm.sha256, .md5])
    func theNextRequestOnAProvenNonceSkipsTheLookup(_ algorithm: DigestAlgorithm) {
        let authenticator = Fixture.authenticator()
        let store = CountingStore()
        let challenge = authenticator.challenges(now: Fixture.t0).first { $0.algorithm == algorithm }!
        #expect(Self.verify(authenticator, Fixture.answer(challenge), store: store) == .ok(user: "Mufasa"))
        #expect(store.count == 1)
        #expect(Self.verify(authenticator, Fixture.answer(challenge, nc: "00000002"), store: store) == .ok(user: "Mufasa"))
        #expect(Self.verify(authenticator, Fixture.answer(challenge, nc: "00000003"), store: store) == .ok(user: "Mufasa"))
        #expect(store.count == 1, "requests on a proven nonce opened the stored HA1 again")
        // Decisions do not change: a replay, a wrong password, a wrong method on that nonce.
        #expect(Self.verify(authenticator, Fixture.answer(challenge, nc: "00000003"), store: store) == .failed(reason: .replayedNonce))
        #expect(Self.verify(authenticator, Fixture.answer(challenge, password: "wrong", nc: "00000004"), store: store)
            == .failed(reason: .badPassword))
        #expect(Self.verify(authenticator, Fixture.answer(challenge, method: "POST", nc: "00000004"), store: store)
            == .failed(reason: .badPassword))
        // Another user on the same nonce is looked up, and proves nothing for Mufasa.
        let other = Fixture.answer(challenge, user: "Jäsøn Doe", password: "Secret, or not?", nc: "00000005")
        #expect(Self.verify(authenticator, other, store: store) == .ok(user: "Jäsøn Doe"))
        #expect(store.count == 2)
    }

    /// A password change moves the credentials version: the old HA1 must not answer.
    @Test func aNewCredentialsVersionLooksUpAgainAndTheOldPasswordFails() {
        let authenticator = Fixture.authenticator()
        let store = CountingStore()
        let challenge = authenticator.challenges(now: Fixture.t0)[0]
        #expect(Self.verify(authenticator, Fixture.answer(challenge), store: store, version: 1) == .ok(user: "Mufasa"))
        store.passwords.withLock { $0["Mufasa"] = "Hakuna Matata" }
        #expect(Self.verify(authenticator, Fixture.answer(challenge, nc: "00000002"), store: store, version: 2)
            == .failed(reason: .badPassword))
        #expect(store.count == 2)
        #expect(Self.verify(authenticator, Fixture.answer(challenge, password: "Hakuna Matata", nc: "00000003"), store: store,
                            version: 2) == .ok(user: "Mufasa"))
    }

    @Test func withoutAVersionEveryRequestLooksUp() {
        let authenticator = Fixture.authenticator()
        let store = CountingStore()
        let challenge = authenticator.challenges(now: Fixture.t0)[0]
        for nc in ["00000001", "00000002", "00000003"] {
            #expect(Self.verify(authenticator, Fixture.answer(challenge, nc: nc), store: store, version: nil) == .ok(user: "Mufasa"))
        }
        #expect(store.count == 3)
    }

    /// An expired nonce is stale whether or not its HA1 was proven.
    @Test func aProvenNonceIsStaleOnceExpired() {
        let authenticator = Fixture.authenticator(lifetime: 60)
        let store = CountingStore()
        let challenge = authenticator.challenges(now: Fixture.t0)[0]
        #expect(Self.verify(authenticator, Fixture.answer(challenge), store: store) == .ok(user: "Mufasa"))
        #expect(Self.verify(authenticator, Fixture.answer(challenge, nc: "00000002"), store: store, now: Fixture.t0 + 61) == .stale)
    }
}
