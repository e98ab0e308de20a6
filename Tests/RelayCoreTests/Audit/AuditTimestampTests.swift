import RelayCore
import Testing

@Suite struct AuditTimestampTests {
    @Test func formatsTheContractExample() {
        #expect(AuditTimestamp.format(micros: 1_796_062_904_123_456) == "2026-11-30T18:21:44.123456Z")
    }

    @Test func formatsEpochLeapDayAndSmallFractions() {
        #expect(AuditTimestamp.format(micros: 0) == "1970-01-01T00:00:00.000000Z")
        #expect(AuditTimestamp.format(micros: 951_868_799_000_001) == "2000-02-29T23:59:59.000001Z")
        #expect(AuditTimestamp.format(micros: 1_796_062_904_000_000) == "2026-11-30T18:21:44.000000Z")
    }

    @Test func floorsInstantsBeforeTheEpoch() {
        #expect(AuditTimestamp.format(micros: -1) == "1969-12-31T23:59:59.999999Z")
        #expect(AuditTimestamp.format(micros: -1_000_000) == "1969-12-31T23:59:59.000000Z")
    }

    @Test func nowIsRecentAndFormatsToTheFixedWidth() {
        let now = AuditTimestamp.nowMicros()
        #expect(now > 1_796_062_904_000_000 - 366 * 86_400 * 1_000_000)  // after late 2025
        let text = AuditTimestamp.format(micros: now)
        #expect(text.utf8.count == 27)
        #expect(text.hasSuffix("Z"))
    }

    /// The writer's formatter keeps the last second's prefix: crossing seconds, minutes, days
    /// and going back in time must each give what a fresh format gives.
    @Test func reusedFormatterMatchesFreshFormatsAcrossSecondsAndBackwards() {
        let formatter = AuditTimestamp.Formatter()
        let instants: [Int64] = [
            1_796_062_904_123_456, 1_796_062_904_999_999, 1_796_062_905_000_000, 1_796_062_959_999_999,
            1_796_062_960_000_001, 1_796_083_199_999_999, 1_796_083_200_000_000, 1_796_062_904_000_007,
            0, -1, 951_868_799_000_001, 951_868_799_000_002,
        ]
        for micros in instants {
            #expect(String(decoding: formatter.format(micros: micros), as: UTF8.self) == AuditTimestamp.format(micros: micros))
        }
        #expect(String(decoding: formatter.format(micros: 1_796_083_200_000_000), as: UTF8.self) == "2026-12-01T00:00:00.000000Z")
    }

    @Test func parseInvertsFormatAndRefusesEverythingElse() {
        for micros: Int64 in [0, 1, 951_868_799_000_001, 1_796_062_904_123_456, -1] {
            #expect(AuditTimestamp.parse(AuditTimestamp.format(micros: micros)) == micros)
        }
        for bad in ["", "2026-11-30T18:21:44.123456", "2026-11-30T18:21:44.123456z", "2026-13-30T18:21:44.123456Z",
                    "2026-11-30T18:21:61.123456Z", "2026-02-30T18:21:44.123456Z", "2026-11-30 18:21:44.123456Z",
                    "2026-11-30T18:21:44,123456Z", "invalid-time:5"] {
            #expect(AuditTimestamp.parse(bad) == nil, "\(bad)")
        }
    }
}
