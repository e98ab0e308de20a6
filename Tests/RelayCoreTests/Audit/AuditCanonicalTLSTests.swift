import RelayCore
import Testing

/// The TLS extension group of the canonical form: absent (and the bytes unchanged) unless one
/// of its fields is set, and then covered field by field.
@Suite struct AuditCanonicalTLSTests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    private static var withTLS: AuditRecord {
        var r = AuditFixtures.full
        r.tlsSNI = "app1.corp.example"
        r.tlsECH = true
        r.clientTLSVersion = "TLSv1.3"
        r.clientTLSCipher = "TLS_CHACHA20_POLY1305_SHA256"
        return r
    }

    @Test func aRowWithoutTheGroupKeepsTheBaseBytes() {
        // The same golden string as the base form's test: rows stored without the group must
        // hash as they always did.
        let r = AuditFixtures.full
        #expect(!r.hasTLSExtension)
        #expect(text(AuditCanonical.encode(seq: 7, ts: AuditFixtures.ts, r)) == AuditFixtures.fullCanonical)
    }

    @Test func theGroupFollowsItsMarkerGoldenBytes() {
        let bytes = AuditCanonical.encode(seq: 7, ts: AuditFixtures.ts, Self.withTLS)
        #expect(text(bytes) == AuditFixtures.fullCanonical
            + "v2,17:app1.corp.example,1:1,7:TLSv1.3,28:TLS_CHACHA20_POLY1305_SHA256,")
    }

    @Test func anyOneFieldBringsTheGroupWithNullsForTheOthers() {
        let base = AuditFixtures.minimal
        let baseText = "1:1,1:t,7:refused,0:,1:c,1:l,-,-,-,-,-,4:deny,6:denied,-,1:0,1:0,-,-,-,1:0,"
        #expect(text(AuditCanonical.encode(seq: 1, ts: "t", base)) == baseText)
        let cases: [(String, (inout AuditRecord) -> Void, String)] = [
            ("tlsSNI", { $0.tlsSNI = "a.example" }, "v2,9:a.example,-,-,-,"),
            ("tlsSNI empty", { $0.tlsSNI = "" }, "v2,0:,-,-,-,"),
            ("tlsECH false", { $0.tlsECH = false }, "v2,-,1:0,-,-,"),
            ("tlsECH true", { $0.tlsECH = true }, "v2,-,1:1,-,-,"),
            ("clientTLSVersion", { $0.clientTLSVersion = "TLSv1.2" }, "v2,-,-,7:TLSv1.2,-,"),
            ("clientTLSCipher", { $0.clientTLSCipher = "X" }, "v2,-,-,-,1:X,"),
        ]
        for (name, mutate, suffix) in cases {
            var r = base
            mutate(&r)
            #expect(r.hasTLSExtension, "\(name)")
            #expect(text(AuditCanonical.encode(seq: 1, ts: "t", r)) == baseText + suffix, "\(name)")
        }
    }

    @Test func everyExtensionFieldIsCovered() {
        let base = Self.withTLS
        let baseBytes = AuditCanonical.encode(seq: 1, ts: "t", base)
        let mutations: [(String, (inout AuditRecord) -> Void)] = [
            ("tlsSNI", { $0.tlsSNI = "app2.corp.example" }), ("tlsSNI nil", { $0.tlsSNI = nil }),
            ("tlsECH", { $0.tlsECH = false }), ("tlsECH nil", { $0.tlsECH = nil }),
            ("clientTLSVersion", { $0.clientTLSVersion = "TLSv1.2" }), ("clientTLSVersion nil", { $0.clientTLSVersion = nil }),
            ("clientTLSCipher", { $0.clientTLSCipher = "x" }), ("clientTLSCipher nil", { $0.clientTLSCipher = nil }),
            ("tlsVersion", { $0.tlsVersion = nil }), ("simulated", { $0.simulated = false }),
        ]
        for (name, mutate) in mutations {
            var changed = base
            mutate(&changed)
            #expect(AuditCanonical.encode(seq: 1, ts: "t", changed) != baseBytes, "\(name) not covered")
        }
    }

    /// Exhaustive over hostile values, including ones that spell the marker or a field: no
    /// two assignments of a base text field and the extension fields encode alike, whether
    /// the group is present or not.
    @Test func encodingStaysInjectiveAcrossTheMarker() {
        let values: [String?] = [nil, "", "-", "v2,", "v2,-,", "1:0,", "1:0,v2,1:a,", "a"]
        let echs: [Bool?] = [nil, false, true]
        var seen: [[UInt8]: String] = [:]
        for cipher in values {
            for sni in values {
                for ech in echs {
                    for client in values {
                        var r = AuditFixtures.minimal
                        r.tlsCipher = cipher
                        r.tlsSNI = sni
                        r.tlsECH = ech
                        r.clientTLSVersion = client
                        let key = "\(String(describing: cipher))|\(String(describing: sni))|\(String(describing: ech))|\(String(describing: client))"
                        let bytes = AuditCanonical.encode(seq: 1, ts: "t", r)
                        #expect(seen[bytes] == nil, "\(key) collides with \(seen[bytes] ?? "")")
                        seen[bytes] = key
                    }
                }
            }
        }
        #expect(seen.count == values.count * values.count * echs.count * values.count)
    }

    @Test func fieldRangesPointAtTheExtensionValues() {
        let r = Self.withTLS
        let ts = Array(AuditFixtures.ts.utf8)
        let fields = AuditCanonical.FieldRanges()
        let capacity = AuditCanonical.maxEncodedCount(r, timestampCount: ts.count)
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 8)
        defer { out.deallocate() }
        let count = ts.withUnsafeBytes { AuditCanonical.encode(seq: 7, ts: $0, r, into: out, fields: fields) }
        #expect(count <= capacity)
        func value(_ field: Int) -> String? {
            fields[field].map { String(decoding: out[$0], as: UTF8.self) }
        }
        #expect(value(19) == "1")
        #expect(value(20) == "app1.corp.example")
        #expect(value(21) == "1")
        #expect(value(22) == "TLSv1.3")
        #expect(value(23) == "TLS_CHACHA20_POLY1305_SHA256")

        // A row without the group leaves the extension ranges NULL, even after one with it.
        _ = ts.withUnsafeBytes { AuditCanonical.encode(seq: 8, ts: $0, AuditFixtures.full, into: out, fields: fields) }
        #expect((20..<AuditCanonical.fieldCount).allSatisfy { fields[$0] == nil })
        #expect(value(18) == "TLS_AES_128_GCM_SHA256")
    }

    @Test func closeRowForALeftOpenStreamKeepsItsTLSFacts() throws {
        var open = Self.withTLS
        open.event = .tunnelOpen
        let close = try #require(UnclosedStreams.closeRow(for: open, reason: "relay-crashed", micros: 1))
        #expect(close.tlsSNI == "app1.corp.example")
        #expect(close.tlsECH == true)
        #expect(close.clientTLSVersion == "TLSv1.3")
        #expect(close.clientTLSCipher == "TLS_CHACHA20_POLY1305_SHA256")
    }
}
