import RelayCore
import RelayServer
import Testing

/// `AuditLog.query`: time ranges found by bisecting seq, which holds only because the writer
/// never lets `ts` go backwards; and the JSON lines reviewers read.
@Suite struct AuditQueryTests {
    /// 2026-11-30T18:21:44.000000Z
    static let base: Int64 = 1_796_062_904_000_000

    static func record(_ n: Int, at micros: Int64, principal: String? = nil) -> AuditRecord {
        var r = Records.sample(n)
        r.timestampMicros = micros
        r.principal = principal
        return r
    }

    static func seqs(_ path: String, since: String? = nil, until: String? = nil) throws -> [Int64] {
        var seqs: [Int64] = []
        try AuditLog.query(path: path, since: since, until: until) { row in
            if case .integer(let seq)? = row["seq"] { seqs.append(seq) }
        }
        return seqs
    }

    @Test func aRowQueuedAfterALaterStampTakesItsPredecessorsTime() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path, synchronousFull: false)
        log.append(Self.record(1, at: Self.base + 500))
        log.append(Self.record(2, at: Self.base + 200))  // stamped earlier on another loop
        log.append(Self.record(3, at: Self.base + 900))
        log.close()
        let ts = try SQL.query(path, "SELECT ts FROM audit_events ORDER BY seq").map { $0["ts"]!.string! }
        #expect(ts == ["2026-11-30T18:21:44.000500Z", "2026-11-30T18:21:44.000500Z", "2026-11-30T18:21:44.000900Z"])
        #expect(AuditLog.verify(path: path) == .ok(records: 3))

        // Across a restart the tail's time is read back from the database.
        let reopened = try AuditLog(path: path, synchronousFull: false)
        reopened.append(Self.record(4, at: Self.base + 100))
        reopened.close()
        let last = try SQL.query(path, "SELECT ts FROM audit_events WHERE seq = 4")
        #expect(last.first?["ts"]?.string == "2026-11-30T18:21:44.000900Z")
    }

    @Test func rangesAreSinceInclusiveUntilExclusiveAtEveryBoundary() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path, synchronousFull: false)
        // Seconds 0,0,1,2,2,2,3,5 after base: duplicates and a gap.
        let offsets: [Int64] = [0, 0, 1, 2, 2, 2, 3, 5]
        for (n, seconds) in offsets.enumerated() {
            log.append(Self.record(n + 1, at: Self.base + seconds * 1_000_000))
        }
        log.close()
        let second = { (s: Int) in "2026-11-30T18:21:\(44 + s)" }
        #expect(try Self.seqs(path) == Array(1...8))
        #expect(try Self.seqs(path, since: second(2)) == [4, 5, 6, 7, 8])
        #expect(try Self.seqs(path, until: second(2)) == [1, 2, 3])
        #expect(try Self.seqs(path, since: second(2), until: second(3)) == [4, 5, 6])
        #expect(try Self.seqs(path, since: second(4), until: second(5)) == [])
        #expect(try Self.seqs(path, since: second(5) + ".000000Z") == [8])
        #expect(try Self.seqs(path, since: second(6)) == [])
        #expect(try Self.seqs(path, until: second(0)) == [])
        #expect(try Self.seqs(path, since: "2026-11-30T18:21:46Z", until: "2026-11-30T18:21:47.000001") == [4, 5, 6, 7])
        // Prefixes: the whole day, the whole hour, the year before.
        #expect(try Self.seqs(path, since: "2026-11-30") == Array(1...8))
        #expect(try Self.seqs(path, since: "2026-11-30T18", until: "2026-11-30T19") == Array(1...8))
        #expect(try Self.seqs(path, until: "2026") == [])
        // Every split point agrees with a plain filter over all rows.
        for probe in 0...6 {
            let bound = second(probe)
            let expected = offsets.enumerated().filter { 44 + Int($0.element) >= 44 + probe }.map { Int64($0.offset + 1) }
            #expect(try Self.seqs(path, since: bound) == expected, "since \(bound)")
        }
    }

    @Test func anEmptyTrailAnswersNothing() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        try AuditLog(path: path).close()
        #expect(try Self.seqs(path) == [])
        #expect(try Self.seqs(path, since: "2026") == [])
    }

    @Test func malformedBoundsAreRefusedNotGuessed() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        try Records.writeLog(at: path, count: 3)
        for bad in ["", "yesterday", "2026-1", "2026-12-01 04:30", "2026-12-01T4:30", "2026-12-01T04:30:00.", "2026-12-01T04:30:00+01:00",
                    "2026-12-01T04:30:00.0000000Z", "２０２６"] {
            #expect(throws: AuditQueryError.self, "\(bad)") { try Self.seqs(path, since: bad) }
            #expect(throws: AuditQueryError.self, "\(bad)") { try Self.seqs(path, until: bad) }
        }
        #expect(AuditLog.timeBound("2026-12-01T04:30:00Z") == "2026-12-01T04:30:00")
        #expect(AuditLog.timeBound("2026-12-01T04:30:00.123456Z") == "2026-12-01T04:30:00.123456Z")
        #expect(throws: AuditQueryError.self) { try AuditLog.query(path: dir.path("missing.db")) { _ in } }
    }

    @Test func jsonLinesCarryEveryColumnAndEscapeText() throws {
        let dir = try TempDir()
        let path = dir.path("audit.db")
        let log = try AuditLog(path: path)
        log.append(Self.record(1, at: Self.base, principal: "a\"b\\c\nd\u{1}é"))
        log.close()
        var lines: [String] = []
        try AuditLog.query(path: path) { lines.append($0.jsonLine) }
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        #expect(line.hasPrefix("{\"seq\":1,\"ts\":\"2026-11-30T18:21:44.000000Z\",\"event\":\"tunnel-open\","))
        #expect(line.contains("\"principal\":\"a\\\"b\\\\c\\nd\\u0001é\""))
        #expect(line.contains("\"status\":null"))
        #expect(line.contains("\"prev_hash\":\"" + String(repeating: "0", count: 64) + "\""))
        #expect(!line.contains("\n"))
    }
}
