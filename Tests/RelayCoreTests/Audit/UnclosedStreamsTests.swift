import Testing
@testable import RelayCore

/// Which open rows of a stretch of the trail no close row ended.
@Suite struct UnclosedStreamsTests {
    static func row(_ event: AuditEvent, _ session: String, target: String = "app:443") -> AuditRecord {
        AuditRecord(event: event, timestampMicros: 1, session: session, client: "10.0.0.9:5000", listener: "127.0.0.1:3128",
                    principal: "alice", scheme: "Basic", target: target, resolved: "10.1.1.1:443", rule: "f.conf:3",
                    decision: .allow, reason: "allowed")
    }

    static func left(_ rows: [AuditRecord]) -> [Int64] {
        var streams = UnclosedStreams()
        for (index, row) in rows.enumerated() { streams.add(seq: Int64(index + 1), row) }
        return streams.remaining.map(\.seq)
    }

    @Test func closedStreamsAreNotLeft() {
        #expect(Self.left([Self.row(.tunnelOpen, "a"), Self.row(.forwardOpen, "b"), Self.row(.tunnelClose, "a"),
                           Self.row(.forwardClose, "b")]).isEmpty)
    }

    @Test func aKeepAliveConnectionLeavesOnlyItsLastRequestOpen() {
        let rows = [Self.row(.requestOpen, "k"), Self.row(.requestClose, "k"), Self.row(.requestOpen, "k"),
                    Self.row(.requestClose, "k"), Self.row(.requestOpen, "k"), Self.row(.tunnelOpen, "k")]
        #expect(Self.left(rows) == [5, 6], "the third request and the tunnel after it were running")
    }

    @Test func aCloseEndsOnlyItsOwnSessionAndKind() {
        let rows = [Self.row(.tunnelOpen, "a"), Self.row(.requestOpen, "a"), Self.row(.tunnelOpen, "b"),
                    Self.row(.requestClose, "a"), Self.row(.tunnelClose, "c"), Self.row(.refused, "a")]
        #expect(Self.left(rows) == [1, 3])
    }

    @Test func aCloseWhoseOpenRowCameEarlierIsIgnored() {
        #expect(Self.left([Self.row(.tunnelClose, "old"), Self.row(.tunnelOpen, "old")]) == [2])
    }

    @Test func theCloseRowKeepsTheStreamAndKnowsNothingOfItsEnd() throws {
        let open = Self.row(.forwardOpen, "f")
        let close = try #require(UnclosedStreams.closeRow(for: open, reason: "relay-crashed", micros: 99))
        #expect(close.event == .forwardClose)
        #expect(close.timestampMicros == 99)
        #expect(close.reason == "relay-crashed")
        #expect([close.session, close.client, close.listener] == [open.session, open.client, open.listener])
        #expect([close.principal, close.scheme, close.target, close.resolved, close.rule]
                == [open.principal, open.scheme, open.target, open.resolved, open.rule])
        #expect(close.decision == .allow)
        #expect(close.bytesUp == nil && close.bytesDown == nil && close.status == nil && close.durationMs == nil)
        #expect(UnclosedStreams.closeRow(for: Self.row(.refused, "r"), reason: "x", micros: 1) == nil)
    }

    @Test func unknownByteCountsEncodeAsNull() {
        var record = AuditFixtures.full
        record.bytesUp = nil
        record.bytesDown = nil
        let text = String(decoding: AuditCanonical.encode(seq: 7, ts: AuditFixtures.ts, record), as: UTF8.self)
        #expect(text.contains(",3:200,-,-,2:42,"), "\(text)")
    }
}
