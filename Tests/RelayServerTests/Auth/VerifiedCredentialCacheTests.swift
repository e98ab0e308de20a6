import Testing
@testable import RelayServer

/// The verified-login cache's states against explicit times: proven, renewal due once in
/// the last fifth of a proof's life, gone after expiry or under another store generation.
@Suite struct VerifiedCredentialCacheTests {
    static let second: UInt64 = 1_000_000_000

    @Test func aProofIsRenewedOnceInTheLastFifthOfItsLifeAndEndsAtItsTTL() {
        let cache = VerifiedCredentialCache(ttl: 10 * Self.second)
        let token = cache.token(user: "alice", password: "wonderland")
        #expect(cache.lookup(token, generation: 1, now: 0) == .unknown)
        cache.insert(token, generation: 1, now: 0)
        #expect(cache.lookup(token, generation: 1, now: 7 * Self.second) == .proven)
        #expect(cache.lookup(token, generation: 1, now: 8 * Self.second) == .provenRenewDue)
        #expect(cache.lookup(token, generation: 1, now: 9 * Self.second) == .proven, "one renewal at a time")
        #expect(cache.lookup(token, generation: 1, now: 10 * Self.second) == .unknown, "the TTL still ends it")
        #expect(cache.lookup(token, generation: 1, now: 10 * Self.second) == .unknown)
    }

    @Test func aRenewalProvesTheEntryForAnotherTTLAndOneNotStartedIsAskedForAgain() {
        let cache = VerifiedCredentialCache(ttl: 10 * Self.second)
        let token = cache.token(user: "alice", password: "wonderland")
        cache.insert(token, generation: 1, now: 0)
        #expect(cache.lookup(token, generation: 1, now: 9 * Self.second) == .provenRenewDue)
        cache.renewalNotStarted(token)
        #expect(cache.lookup(token, generation: 1, now: 9 * Self.second) == .provenRenewDue)
        cache.insert(token, generation: 1, now: 9 * Self.second)
        #expect(cache.lookup(token, generation: 1, now: 15 * Self.second) == .proven)
        cache.remove(token)
        #expect(cache.lookup(token, generation: 1, now: 15 * Self.second) == .unknown)
    }

    @Test func aStoreChangeEndsEveryProofAndAnOlderCheckCannotReplaceANewerProof() {
        let cache = VerifiedCredentialCache(ttl: 10 * Self.second)
        let token = cache.token(user: "alice", password: "wonderland")
        cache.insert(token, generation: 1, now: 0)
        #expect(cache.lookup(token, generation: 2, now: 1) == .unknown)
        cache.insert(token, generation: 3, now: 2)
        cache.insert(token, generation: 2, now: 3)  // a renewal that started before the change
        #expect(cache.lookup(token, generation: 3, now: 4) == .proven)
        #expect(cache.lookup(token, generation: 2, now: 4) == .unknown)
    }

    @Test func aZeroTTLCachesNothing() {
        let cache = VerifiedCredentialCache(ttl: 0)
        let token = cache.token(user: "alice", password: "wonderland")
        cache.insert(token, generation: 1, now: 0)
        #expect(cache.lookup(token, generation: 1, now: 0) == .unknown)
    }
}
