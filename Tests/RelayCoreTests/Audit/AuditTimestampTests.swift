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
}
