import Testing
@testable import RelayCore

@Suite("Cookie date (RFC 6265 5.1.1)")
struct CookieDateTests {
    /// 1994-11-06 08:49:37 UTC, the instant RFC 7231 writes in its three formats.
    static let rfcExample: Int64 = 784_111_777

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
        "06 Nov 1994 08:49:37",
        "Sun, 06-nov-1994 08:49:37 UTC",
        "NOVEMBER 6 1994 8:49:37",
        "6 Nov 94 08:49:37xyz",
        "08:49:37 1994 Novemb 06",
        "Sun,06 Nov 1994 08:49:37 GMT;",
    ])
    func readsTheFormatsFoundInTheWild(text: String) {
        #expect(CookieDate.parse(text) == Self.rfcExample)
    }

    @Test func twoDigitYears() {
        #expect(CookieDate.parse("01 Jan 70 00:00:00") == 0)
        #expect(CookieDate.parse("01 Jan 69 00:00:00") == Int64(CookieDate.daysFromCivil(year: 2069, month: 1, day: 1)) * 86_400)
        #expect(CookieDate.parse("01 Jan 1601 00:00:00") == -11_644_473_600)
        #expect(CookieDate.parse("29 Feb 2000 23:59:59") == 951_868_799)
        #expect(CookieDate.parse("31 Dec 9999 23:59:59") == 253_402_300_799)
    }

    @Test(arguments: [
        "", "garbage", "Sun, 06 Nov 1994", "06 Nov 1994 08:49", "06 1994 08:49:37",
        "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 00 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 08:49:60 GMT",
        "01 Jan 1600 00:00:00", "31 Feb 2021 00:00:00", "29 Feb 2100 00:00:00",
        "06 Nov 19945 08:49:37", "006 Nov 1994 08:49:37", "06 Nov 1994 008:49:37",
    ])
    func refusesDatesTheAlgorithmRejects(text: String) {
        #expect(CookieDate.parse(text) == nil)
    }
}
