import Testing
@testable import RelayCore

@Suite("Set-Cookie parsing (RFC 6265 5.2)")
struct SetCookieTests {
    @Test func nameValueAndWhitespace() throws {
        let cookie = try #require(SetCookie(parsing: " \tsid = a b=c \t; Path=/x"))
        #expect(cookie.name == "sid")
        #expect(cookie.value == "a b=c")
        #expect(cookie.path == "/x")
        #expect(try #require(SetCookie(parsing: "empty=")).value == "")
        #expect(try #require(SetCookie(parsing: "q=\"quoted\"")).value == "\"quoted\"")
    }

    @Test(arguments: ["noequals", "=value", "  =value", "", ";a=b", "noequals; a=b"])
    func ignoredEntirely(text: String) {
        #expect(SetCookie(parsing: text) == nil)
    }

    @Test func attributeNamesAreCaseInsensitiveAndTheLastWins() throws {
        let cookie = try #require(SetCookie(parsing:
            "a=b; PATH=/one; path=/two; DOMAIN=.Example.COM; secure; HTTPONLY; unknown=x; Max-Age=10; max-age=20"))
        #expect(cookie.path == "/two")
        #expect(cookie.domain == "example.com")
        #expect(cookie.secure)
        #expect(cookie.httpOnly)
        #expect(cookie.maxAge == 20)
    }

    @Test func invalidAttributesAreIgnoredSoAnEarlierValidOneStands() throws {
        let cookie = try #require(SetCookie(parsing:
            "a=b; Max-Age=5; Max-Age=5s; Max-Age=; Max-Age=+3; Expires=Sun, 06 Nov 1994 08:49:37 GMT; Expires=never; Domain=x.example; Domain="))
        #expect(cookie.maxAge == 5)
        #expect(cookie.expires == 784_111_777)
        #expect(cookie.domain == "x.example")
    }

    @Test func maxAgeSignAndOverflow() throws {
        #expect(try #require(SetCookie(parsing: "a=b; Max-Age=-1")).maxAge == -1)
        #expect(try #require(SetCookie(parsing: "a=b; Max-Age=0")).maxAge == 0)
        #expect(try #require(SetCookie(parsing: "a=b; Max-Age=99999999999999999999999")).maxAge == Int64.max)
        #expect(try #require(SetCookie(parsing: "a=b; Max-Age=-")).maxAge == nil)
    }

    @Test func aPathNotStartingWithSlashMeansTheDefaultPath() throws {
        #expect(try #require(SetCookie(parsing: "a=b; Path=/x; Path=relative")).path == nil)
        #expect(try #require(SetCookie(parsing: "a=b; Path=")).path == nil)
        #expect(try #require(SetCookie(parsing: "a=b; Path=/x")).path == "/x")
    }
}
