import Testing
@testable import RelayCore

/// The table of issued Digest nonces: exact-text lookup, expiry, replay, capacity, and the
/// proven HA1 kept no longer than its nonce and only for the same user, algorithm, version.
@Suite struct DigestNonceTableTests {
    static let t0: UInt64 = 1_700_000_000

    static func key(_ nonce: String) -> DigestNonceTable.Key { DigestNonceTable.Key(nonce)! }

    static func proof(_ ha1: [UInt8], user: String = "u", algorithm: DigestAlgorithm = .md5,
                      version: UInt64 = 7) -> DigestNonceTable.Proof {
        .init(user: user, algorithm: algorithm, version: version, ha1: ha1)
    }

    @Test func issuedNoncesAreRandomBase64OfTheFixedLength() throws {
        let table = DigestNonceTable(capacity: 8, lifetime: 10)
        let nonces = (0..<4).map { _ in table.issue(now: Self.t0) }
        #expect(Set(nonces).count == 4)
        for nonce in nonces {
            #expect(nonce.utf8.count == DigestNonceTable.encodedLength)
            #expect(try AuthCrypto.base64Decode(nonce, maxDecodedCount: 48).count == 48)
        }
        #expect(table.count == 4)
    }

    @Test func onlyTheExactIssuedTextIsFresh() {
        let table = DigestNonceTable(capacity: 8, lifetime: 10)
        let nonce = table.issue(now: Self.t0)
        let fresh = DigestNonceTable.Lookup.fresh(provenHA1: nil)
        #expect(table.lookup(Self.key(nonce), now: Self.t0, user: "u", algorithm: .md5, version: 7) == fresh)
        // Every single-character change, including the case of a letter, is another nonce.
        var utf8 = Array(nonce.utf8)
        for index in [0, 1, 31, 62, 63] {
            let original = utf8[index]
            utf8[index] = original == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            let changed = String(decoding: utf8, as: UTF8.self)
            #expect(table.lookup(Self.key(changed), now: Self.t0, user: nil, algorithm: .md5, version: nil) == .stale)
            #expect(table.record(Self.key(changed), count: 1, now: Self.t0) == .stale)
            utf8[index] = original
        }
        // Not 64 bytes: no key at all.
        #expect(DigestNonceTable.Key(String(nonce.dropLast())) == nil)
        #expect(DigestNonceTable.Key(nonce + "A") == nil)
        #expect(DigestNonceTable.Key("") == nil)
        #expect(DigestNonceTable.Key(String(nonce.dropLast()) + "é") == nil)
    }

    @Test func aNonceIsFreshForItsLifetimeAndThenStale() {
        // Dated after now: the clock stepped back, which the monotonic clock the relay passes
        // never does; the nonce is not trusted to live longer for it, and is forgotten.
        let stepped = DigestNonceTable(capacity: 8, lifetime: 10)
        let future = Self.key(stepped.issue(now: Self.t0))
        #expect(stepped.lookup(future, now: Self.t0 - 1, user: nil, algorithm: .md5, version: nil) == .stale)
        #expect(stepped.record(future, count: 1, now: Self.t0) == .stale)

        let table = DigestNonceTable(capacity: 8, lifetime: 10)
        let key = Self.key(table.issue(now: Self.t0))
        #expect(table.lookup(key, now: Self.t0 + 10, user: nil, algorithm: .md5, version: nil) != .stale)
        #expect(table.record(key, count: 1, now: Self.t0 + 10) == .accepted)
        #expect(table.lookup(key, now: Self.t0 + 11, user: nil, algorithm: .md5, version: nil) == .stale)
        #expect(table.record(key, count: 2, now: Self.t0 + 11) == .stale)
        #expect(table.count == 0, "an expired nonce was not swept")
    }

    /// Each count once; late ones within the window too (parallel connections sharing a
    /// nonce), none below it.
    @Test func eachCountIsAcceptedOnceEvenOutOfOrder() {
        let table = DigestNonceTable(capacity: 8, lifetime: 10)
        let key = Self.key(table.issue(now: Self.t0))
        #expect(table.record(key, count: 1, now: Self.t0) == .accepted)
        #expect(table.record(key, count: 1, now: Self.t0) == .replayed)
        #expect(table.record(key, count: 3, now: Self.t0) == .accepted)
        #expect(table.record(key, count: 2, now: Self.t0) == .accepted, "late, not seen before")
        #expect(table.record(key, count: 2, now: Self.t0) == .replayed)
        #expect(table.record(key, count: 0, now: Self.t0) == .replayed)
        #expect(table.record(key, count: 67, now: Self.t0) == .accepted)
        #expect(table.record(key, count: 3, now: Self.t0) == .replayed, "seen, and exactly at the window's edge")
        #expect(table.record(key, count: 4, now: Self.t0) == .accepted, "64 below the highest, never seen")
        #expect(table.record(key, count: 4, now: Self.t0) == .replayed)
        #expect(table.record(key, count: 132, now: Self.t0) == .accepted, "a jump of 65")
        #expect(table.record(key, count: 67, now: Self.t0) == .replayed, "65 below: outside the window")
        #expect(table.record(key, count: 68, now: Self.t0) == .accepted)
        #expect(table.record(key, count: UInt32.max, now: Self.t0) == .accepted)
        #expect(table.record(key, count: UInt32.max, now: Self.t0) == .replayed)
        #expect(table.record(key, count: UInt32.max - 1, now: Self.t0) == .accepted)
    }

    /// The window against a plain set of accepted counts, over random orders.
    @Test func theWindowMatchesASetOfSeenCounts() {
        var rng = SplitMix64(state: 0xC0FFEE)
        for _ in 0..<200 {
            let table = DigestNonceTable(capacity: 8, lifetime: 10)
            let key = Self.key(table.issue(now: Self.t0))
            var seen = Set<UInt32>()
            var highest: UInt32 = 0
            for _ in 0..<300 {
                let count = UInt32.random(in: 0...(highest + 70), using: &rng)
                let expected = !seen.contains(count) && count > 0 && (count > highest || highest - count <= DigestNonceTable.countWindow)
                #expect((table.record(key, count: count, now: Self.t0) == .accepted) == expected, "count \(count), highest \(highest)")
                if expected { seen.insert(count); highest = max(highest, count) }
            }
        }
    }

    @Test func theOldestNonceIsForgottenWhenFull() {
        let table = DigestNonceTable(capacity: 3, lifetime: 100)
        let keys = (0..<5).map { Self.key(table.issue(now: Self.t0 + UInt64($0))) }
        #expect(table.count == 3)
        #expect(table.record(keys[0], count: 1, now: Self.t0 + 5) == .stale)
        #expect(table.record(keys[1], count: 1, now: Self.t0 + 5) == .stale)
        for key in keys[2...] {
            #expect(table.record(key, count: 1, now: Self.t0 + 5) == .accepted)
        }
        // The ring keeps going round.
        let more = (0..<7).map { Self.key(table.issue(now: Self.t0 + 6 + UInt64($0))) }
        #expect(table.count == 3)
        #expect(table.record(more[3], count: 1, now: Self.t0 + 20) == .stale)
        for key in more[4...] {
            #expect(table.record(key, count: 1, now: Self.t0 + 20) == .accepted)
        }
    }

    /// The ring grows as nonces are issued, keeps issue order across sweeps before it first
    /// fills, and wraps once full.
    @Test func theRingGrowsThenWraps() {
        let table = DigestNonceTable(capacity: 4, lifetime: 10)
        let early = Self.key(table.issue(now: Self.t0))
        let kept = Self.key(table.issue(now: Self.t0 + 5))
        let later = Self.key(table.issue(now: Self.t0 + 12))   // sweeps `early`, 12 s old
        #expect(table.count == 2)
        #expect(table.record(early, count: 1, now: Self.t0 + 12) == .stale)
        let more = (0..<2).map { Self.key(table.issue(now: Self.t0 + 13 + UInt64($0))) }
        #expect(table.count == 4)
        // Full: the next issue forgets the oldest still there, `kept`.
        let last = Self.key(table.issue(now: Self.t0 + 15))
        #expect(table.count == 4)
        #expect(table.record(kept, count: 1, now: Self.t0 + 15) == .stale)
        for key in [later] + more + [last] { #expect(table.record(key, count: 1, now: Self.t0 + 15) == .accepted) }
    }

    @Test func aSweepForgetsExpiredNoncesWithoutARequest() {
        let table = DigestNonceTable(capacity: 8, lifetime: 10)
        let key = Self.key(table.issue(now: Self.t0))
        #expect(table.record(key, count: 1, now: Self.t0, proof: Self.proof([1, 2, 3])) == .accepted)
        table.sweep(now: Self.t0 + 10)
        #expect(table.count == 1)
        table.sweep(now: Self.t0 + 11)
        #expect(table.count == 0)
    }

    @Test func expiredNoncesLeaveFromTheOldEnd() {
        let table = DigestNonceTable(capacity: 8, lifetime: 10)
        let early = Self.key(table.issue(now: Self.t0))
        let late = Self.key(table.issue(now: Self.t0 + 5))
        #expect(table.record(late, count: 1, now: Self.t0 + 11) == .accepted)
        #expect(table.count == 1)
        #expect(table.record(early, count: 1, now: Self.t0 + 11) == .stale)
        _ = table.issue(now: Self.t0 + 16)
        #expect(table.count == 1)
    }

    @Test func aProvenHA1AnswersOnlyItsUserAlgorithmAndVersion() {
        let table = DigestNonceTable(capacity: 8, lifetime: 10)
        let key = Self.key(table.issue(now: Self.t0))
        #expect(table.record(key, count: 1, now: Self.t0, proof: Self.proof([1, 2, 3])) == .accepted)
        func lookup(_ user: String?, _ algorithm: DigestAlgorithm, _ version: UInt64?) -> DigestNonceTable.Lookup {
            table.lookup(key, now: Self.t0 + 1, user: user, algorithm: algorithm, version: version)
        }
        #expect(lookup("u", .md5, 7) == .fresh(provenHA1: [1, 2, 3]))
        #expect(lookup("U", .md5, 7) == .fresh(provenHA1: nil))
        #expect(lookup("v", .md5, 7) == .fresh(provenHA1: nil))
        #expect(lookup("u", .sha256, 7) == .fresh(provenHA1: nil))
        #expect(lookup("u", .md5, 8) == .fresh(provenHA1: nil))
        #expect(lookup(nil, .md5, 7) == .fresh(provenHA1: nil))
        #expect(lookup("u", .md5, nil) == .fresh(provenHA1: nil))
        // A refused count keeps the old proof; an accepted one replaces it.
        #expect(table.record(key, count: 1, now: Self.t0, proof: Self.proof([9], user: "v")) == .replayed)
        #expect(lookup("u", .md5, 7) == .fresh(provenHA1: [1, 2, 3]))
        #expect(table.record(key, count: 2, now: Self.t0, proof: Self.proof([4, 5], user: "v")) == .accepted)
        #expect(lookup("u", .md5, 7) == .fresh(provenHA1: nil))
        #expect(lookup("v", .md5, 7) == .fresh(provenHA1: [4, 5]))
        // Another nonce knows nothing of it, and the expired one answers nothing.
        let other = Self.key(table.issue(now: Self.t0))
        #expect(table.lookup(other, now: Self.t0 + 1, user: "v", algorithm: .md5, version: 7) == .fresh(provenHA1: nil))
        #expect(table.lookup(key, now: Self.t0 + 11, user: "v", algorithm: .md5, version: 7) == .stale)
    }

    /// Threads issuing and recording at once: no count is accepted twice, and the highest is
    /// accepted by someone.
    @Test func concurrentRecordsAcceptEachCountOnce() async {
        let table = DigestNonceTable(capacity: 4096, lifetime: 10)
        let key = Self.key(table.issue(now: Self.t0))
        let accepted = await withTaskGroup(of: [UInt32].self) { group in
            for _ in 0..<4 {
                group.addTask {
                    var mine: [UInt32] = []
                    for count in UInt32(1)...500 {
                        if table.record(key, count: count, now: Self.t0) == .accepted { mine.append(count) }
                        _ = table.issue(now: Self.t0)
                    }
                    return mine
                }
            }
            var all: [[UInt32]] = []
            for await mine in group { all.append(mine) }
            return all
        }
        let counts = accepted.flatMap { $0 }
        #expect(Set(counts).count == counts.count, "a count was accepted twice")
        #expect(counts.contains(500))
        #expect(table.record(key, count: 500, now: Self.t0) == .replayed)
        #expect(table.count == 2001)
    }
}
