import Testing
@testable import RelayCore

@Suite("Relay list")
struct RelayListTests {
    @Test func orderGivenIsTheDefaultPriority() throws {
        let relays = try RelayList.parse(["http://r1.example:3128", "https://r2.example:8443/;priority=1", " http://[::1]:8080 ; Priority = 7 "])
        #expect(relays.map(\.description) == [
            "http://r1.example:3128;priority=1", "https://r2.example:8443;priority=1", "http://[::1]:8080;priority=7",
        ])
        #expect(relays[1].url.scheme == .https)
        #expect(try RelayList.parse(relays.map(\.description)) == relays)
    }

    @Test func environmentValue() throws {
        let relays = try RelayList.parse(environmentValue: " http://a.example:3128;priority=2 ,http://b.example:3128,, ")
        #expect(relays.map(\.description) == ["http://a.example:3128;priority=2", "http://b.example:3128;priority=2"])
        #expect(RelayList.environmentVariable == "DYNRELAY_RELAYS")
    }

    @Test(arguments: [
        ("", "empty-relay-list"), (" , ", "empty-relay-list"),
        ("ftp://a.example:21", "bad-relay-url"), ("a.example:3128", "bad-relay-url"),
        ("http://a.example:3128/path", "bad-relay-url"), ("http://a.example:3128/?q", "bad-relay-url"),
        ("http://user@a.example:3128", "bad-relay-url"),
        ("http://a.example:3128;priority=0", "bad-relay-priority"),
        ("http://a.example:3128;priority=-1", "bad-relay-priority"),
        ("http://a.example:3128;priority=+1", "bad-relay-priority"),
        ("http://a.example:3128;priority=", "bad-relay-priority"),
        ("http://a.example:3128;priority=99999999999999999999999", "bad-relay-priority"),
        ("http://a.example:3128;weight=1", "unknown-relay-parameter"),
        ("http://a.example:3128;", "unknown-relay-parameter"),
        ("http://a.example:3128,http://A.example:3128/", "duplicate-relay"),
        ("http://a.example,http://a.example:80", "duplicate-relay"),
    ])
    func refused(value: String, code: String) {
        do {
            let relays = try RelayList.parse(environmentValue: value)
            Issue.record("accepted \(relays)")
        } catch {
            #expect(error.code == code)
        }
    }

    @Test func badURLCarriesTheURLError() {
        do {
            _ = try RelayList.parse(["http://a.example:0"])
            Issue.record("accepted port 0")
        } catch {
            #expect(error.urlError?.code == "bad-port")
            #expect(error.entry == "http://a.example:0")
        }
    }
}
