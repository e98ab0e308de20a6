import Testing
@testable import RelayCore

/// The verified-login cache's tags: SipHash-2-4-128 as its authors specify it, over an input
/// that keeps every user and password pair apart.
struct CredentialTaggerTests {
    /// Key 00..0f, as in the reference implementation's `vectors_sip128`.
    let reference = CredentialTagger(key: Array(0..<16))

    @Test func matchesTheReferenceVectors() {
        // user "" and password "" hash the one byte 00 (the NUL between them).
        #expect(AuthHex.encode(reference.tag(user: "", password: "").bytes) == "da87c1d86b99af44347659119b22fc45")
        // 00 01 … 0e: fifteen bytes, one short of a full block.
        let password = String(decoding: Array(1..<15) as [UInt8], as: UTF8.self)
        #expect(AuthHex.encode(reference.tag(user: "", password: password).bytes) == "5493e99933b0a8117e08ec0f97cfc3d9")
    }

    @Test func separatesUserFromPassword() {
        #expect(reference.tag(user: "ab", password: "c") != reference.tag(user: "a", password: "bc"))
        #expect(reference.tag(user: "alice", password: "pw") == reference.tag(user: "alice", password: "pw"))
        #expect(reference.tag(user: "alice", password: "pw") != reference.tag(user: "alice", password: "pW"))
    }

    @Test func differsBetweenTaggers() {
        // Each tagger (one per process) draws its own key, so a tag means nothing outside the
        // one that made it.
        #expect(CredentialTagger().tag(user: "alice", password: "pw") != CredentialTagger().tag(user: "alice", password: "pw"))
    }
}
