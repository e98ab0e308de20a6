import RelayCore
import Testing

@Suite struct AuditCanonicalTests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func fullRecordGoldenBytes() {
        let bytes = AuditCanonical.encode(seq: 7, ts: AuditFixtures.ts, AuditFixtures.full)
        #expect(text(bytes) == AuditFixtures.fullCanonical)
    }

    @Test func minimalRecordGoldenBytesWriteNullAsDash() {
        let bytes = AuditCanonical.encode(seq: 1, ts: "1970-01-01T00:00:00.000000Z", AuditFixtures.minimal)
        #expect(text(bytes) == "1:1,27:1970-01-01T00:00:00.000000Z,7:refused,0:,1:c,1:l,-,-,-,-,-,4:deny,6:denied,-,1:0,1:0,-,-,-,1:0,")
    }

    @Test func lengthsCountUTF8BytesNotCharacters() {
        var r = AuditFixtures.minimal
        r.principal = "jörg@CORP"  // ö is two bytes
        r.target = "a\u{0}b"
        let encoded = text(AuditCanonical.encode(seq: 1, ts: "t", r))
        #expect(encoded.contains(",10:jörg@CORP,"))
        #expect(encoded.contains(",3:a\u{0}b,"))
    }

    @Test func negativeAndExtremeIntegers() {
        var r = AuditFixtures.minimal
        r.status = -1
        r.bytesUp = Int64.max
        r.bytesDown = Int64.min
        let encoded = text(AuditCanonical.encode(seq: Int64.max, ts: "t", r))
        #expect(encoded.hasPrefix("19:9223372036854775807,1:t,"))
        #expect(encoded.contains(",2:-1,19:9223372036854775807,20:-9223372036854775808,-,"))
    }

    @Test func movingAFieldBoundaryChangesTheEncoding() {
        var a = AuditFixtures.minimal
        a.session = "ab"
        a.client = "c"
        var b = AuditFixtures.minimal
        b.session = "a"
        b.client = "bc"
        #expect(AuditCanonical.encode(seq: 1, ts: "t", a) != AuditCanonical.encode(seq: 1, ts: "t", b))

        // A field that looks like an encoded boundary must not pass for one.
        var c = AuditFixtures.minimal
        c.session = "1:c,1:l"
        c.client = "x"
        var d = AuditFixtures.minimal
        d.session = ""
        d.client = "1:c,1:l,x"
        #expect(AuditCanonical.encode(seq: 1, ts: "t", c) != AuditCanonical.encode(seq: 1, ts: "t", d))
    }

    @Test func nullDiffersFromEmptyAndFromDash() {
        var empty = AuditFixtures.minimal
        empty.principal = ""
        var dash = AuditFixtures.minimal
        dash.principal = "-"
        let null = AuditFixtures.minimal
        let encodings = Set([empty, dash, null].map { AuditCanonical.encode(seq: 1, ts: "t", $0) })
        #expect(encodings.count == 3)
    }

    /// Exhaustive over a hostile alphabet: every distinct assignment of the text fields
    /// (including nil) gives a distinct encoding.
    @Test func encodingIsInjectiveOverHostileFieldValues() {
        let values: [String?] = [nil, "", "-", ",", ":", "1:", "-,", "0:,", "a,1:b", "1"]
        var seen: [[UInt8]: String] = [:]
        for principal in values {
            for scheme in values {
                for target in values {
                    var r = AuditFixtures.minimal
                    r.principal = principal
                    r.scheme = scheme
                    r.target = target
                    let key = "\(String(describing: principal))|\(String(describing: scheme))|\(String(describing: target))"
                    let bytes = AuditCanonical.encode(seq: 1, ts: "t", r)
                    #expect(seen[bytes] == nil, "\(key) collides with \(seen[bytes] ?? "")")
                    seen[bytes] = key
                }
            }
        }
        #expect(seen.count == values.count * values.count * values.count)
    }

    @Test func seqAndTimestampAreCovered() {
        let r = AuditFixtures.full
        #expect(AuditCanonical.encode(seq: 1, ts: "t", r) != AuditCanonical.encode(seq: 2, ts: "t", r))
        #expect(AuditCanonical.encode(seq: 1, ts: "t", r) != AuditCanonical.encode(seq: 1, ts: "u", r))
    }

    @Test func everyFieldIsCovered() {
        let base = AuditFixtures.full
        let baseBytes = AuditCanonical.encode(seq: 1, ts: "t", base)
        let mutations: [(String, (inout AuditRecord) -> Void)] = [
            ("event", { $0.event = .tunnelOpen }), ("session", { $0.session = "s-2" }),
            ("client", { $0.client = "x" }), ("listener", { $0.listener = "x" }),
            ("principal", { $0.principal = nil }), ("scheme", { $0.scheme = "basic" }),
            ("target", { $0.target = "x" }), ("resolved", { $0.resolved = "x" }),
            ("rule", { $0.rule = "x" }), ("decision", { $0.decision = .deny }),
            ("reason", { $0.reason = "x" }), ("status", { $0.status = 403 }),
            ("bytesUp", { $0.bytesUp = 1 }), ("bytesDown", { $0.bytesDown = 1 }),
            ("durationMs", { $0.durationMs = nil }), ("tlsVersion", { $0.tlsVersion = "TLSv1.2" }),
            ("tlsCipher", { $0.tlsCipher = nil }), ("simulated", { $0.simulated = false }),
        ]
        for (name, mutate) in mutations {
            var changed = base
            mutate(&changed)
            #expect(AuditCanonical.encode(seq: 1, ts: "t", changed) != baseBytes, "\(name) not covered")
        }
    }
}
