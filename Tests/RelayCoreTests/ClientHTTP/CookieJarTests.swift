import Testing
@testable import RelayCore

@Suite("Cookie jar (RFC 6265 5.3, 5.4)")
struct CookieJarTests {
    @Test func hostOnlyCookieGoesToTheSameHostOnly() throws {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        let stored = try #require(try jar.receive(setCookie: "a=1", from: testURL("http://www.example.com/dir/page")))
        #expect(stored.hostOnly)
        #expect(stored.domain == "www.example.com")
        #expect(stored.path == "/dir")
        #expect(!stored.isPersistent)
        #expect(jar.cookieHeader(for: testURL("http://www.example.com/dir")) == "a=1")
        #expect(jar.cookieHeader(for: testURL("http://www.example.com/dir/sub")) == "a=1")
        #expect(jar.cookieHeader(for: testURL("http://www.example.com/directory")) == nil)
        #expect(jar.cookieHeader(for: testURL("http://sub.www.example.com/dir")) == nil)
        #expect(jar.cookieHeader(for: testURL("http://example.com/dir")) == nil)
        // A cookie does not care about scheme or port unless Secure.
        #expect(jar.cookieHeader(for: testURL("https://www.example.com:8443/dir")) == "a=1")
    }

    @Test func domainCookieGoesToSubdomains() throws {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        let stored = try #require(try jar.receive(setCookie: "d=1; Domain=.Example.com; Path=/", from: testURL("http://www.example.com/")))
        #expect(!stored.hostOnly)
        #expect(stored.domain == "example.com")
        #expect(jar.cookieHeader(for: testURL("http://example.com/")) == "d=1")
        #expect(jar.cookieHeader(for: testURL("http://a.b.example.com/x")) == "d=1")
        #expect(jar.cookieHeader(for: testURL("http://badexample.com/")) == nil)
        #expect(jar.cookieHeader(for: testURL("http://example.com.evil/")) == nil)
    }

    @Test(arguments: [
        ("http://www.example.com/", "a=1; Domain=other.example", "cookie-domain-mismatch"),
        ("http://www.example.com/", "a=1; Domain=sub.www.example.com", "cookie-domain-mismatch"),
        ("http://www.example.com/", "a=1; Domain=ample.com", "cookie-domain-mismatch"),
        ("http://10.0.0.1/", "a=1; Domain=0.0.1", "cookie-domain-mismatch"),
        ("http://www.example.com/", "a=1; Domain=com", "cookie-public-suffix"),
        ("http://www.example.co.uk/", "a=1; Domain=.co.uk", "cookie-public-suffix"),
        ("http://www.example.com/", "noequals", "malformed-cookie"),
        ("http://www.example.com/", "=v", "malformed-cookie"),
    ])
    func refused(from: String, setCookie: String, code: String) {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        do {
            try jar.receive(setCookie: setCookie, from: testURL(from))
            Issue.record("stored \(setCookie)")
        } catch {
            #expect(error.code == code)
        }
        #expect(jar.cookies.isEmpty)
    }

    @Test func aPublicSuffixThatIsTheHostItselfBecomesHostOnly() throws {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        let stored = try #require(try jar.receive(setCookie: "a=1; Domain=co.uk", from: testURL("http://co.uk/")))
        #expect(stored.hostOnly)
        #expect(stored.domain == "co.uk")
        #expect(jar.cookieHeader(for: testURL("http://www.co.uk/")) == nil)
        #expect(jar.cookieHeader(for: testURL("http://co.uk/")) == "a=1")
    }

    @Test func anIPAddressHostGetsHostOnlyCookies() throws {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        try jar.receive(setCookie: "a=1; Domain=127.0.0.1", from: testURL("http://127.0.0.1:8080/"))
        try jar.receive(setCookie: "b=2", from: testURL("http://[::1]/"))
        #expect(jar.cookieHeader(for: testURL("http://127.0.0.1/")) == "a=1")
        #expect(jar.cookieHeader(for: testURL("http://[::1]/x")) == "b=2")
    }

    @Test func secureCookiesTravelOnlyOverHTTPS() throws {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        try jar.receive(setCookie: "s=1; Secure", from: testURL("https://example.com/"))
        try jar.receive(setCookie: "p=2", from: testURL("https://example.com/"))
        #expect(jar.cookieHeader(for: testURL("http://example.com/")) == "p=2")
        #expect(jar.cookieHeader(for: testURL("https://example.com/")) == "s=1; p=2")
    }

    @Test func httpOnlyIsSentButFlagged() throws {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        let stored = try #require(try jar.receive(setCookie: "h=1; HttpOnly", from: testURL("http://example.com/")))
        #expect(stored.httpOnly)
        #expect(jar.cookieHeader(for: testURL("http://example.com/")) == "h=1")
    }

    @Test func orderIsLongerPathFirstThenEarlierCreation() throws {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        let from = testURL("http://example.com/a/b/c")
        try jar.receive(setCookie: "root1=1; Path=/", from: from)
        clock.advance(1)
        try jar.receive(setCookie: "ab=2; Path=/a/b", from: from)
        try jar.receive(setCookie: "a=3; Path=/a", from: from)
        try jar.receive(setCookie: "root2=4; Path=/", from: from)
        clock.advance(1)
        try jar.receive(setCookie: "ab2=5; Path=/a/b/", from: from)
        #expect(jar.cookieHeader(for: testURL("http://example.com/a/b/c")) == "ab2=5; ab=2; a=3; root1=1; root2=4")
        // Replacing a cookie keeps its creation time, so its place in the order.
        clock.advance(1)
        try jar.receive(setCookie: "root1=changed; Path=/", from: from)
        #expect(jar.cookieHeader(for: testURL("http://example.com/")) == "root1=changed; root2=4")
    }

    @Test func sameNameDomainAndPathReplacesOthersCoexist() throws {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        let from = testURL("http://www.example.com/")
        try jar.receive(setCookie: "n=1", from: from)
        try jar.receive(setCookie: "n=2", from: from)
        try jar.receive(setCookie: "n=3; Path=/x", from: from)
        try jar.receive(setCookie: "n=4; Domain=example.com", from: from)
        #expect(jar.cookies.map(\.value) == ["2", "3", "4"])
    }

    @Test func maxAgeWinsOverExpiresAndExpiryRemoves() throws {
        let clock = ManualCookieClock(784_111_777 - 100)
        var jar = clock.jar()
        let from = testURL("http://example.com/")
        let stored = try #require(try jar.receive(setCookie: "m=1; Max-Age=50; Expires=Sun, 06 Nov 1994 08:49:37 GMT", from: from))
        #expect(stored.expiry == clock.now + 50)
        let byDate = try #require(try jar.receive(setCookie: "e=1; Expires=Sun, 06 Nov 1994 08:49:37 GMT", from: from))
        #expect(byDate.expiry == 784_111_777)
        #expect(jar.cookieHeader(for: from) == "m=1; e=1")
        clock.advance(50)
        #expect(jar.cookieHeader(for: from) == "e=1")
        clock.advance(50)
        #expect(jar.cookieHeader(for: from) == nil)
        #expect(jar.cookies.isEmpty)
    }

    @Test func anExpiryInThePastDeletesTheCookie() throws {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        let from = testURL("http://example.com/")
        try jar.receive(setCookie: "a=1", from: from)
        try jar.receive(setCookie: "b=1", from: from)
        #expect(try jar.receive(setCookie: "a=; Max-Age=0", from: from) == nil)
        #expect(try jar.receive(setCookie: "b=; Expires=Thu, 01 Jan 1970 00:00:00 GMT", from: from) == nil)
        #expect(jar.cookies.isEmpty)
    }

    @Test func sessionCookiesEndWithTheSession() throws {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        let from = testURL("http://example.com/")
        try jar.receive(setCookie: "session=1", from: from)
        try jar.receive(setCookie: "kept=1; Max-Age=3600", from: from)
        jar.removeSessionCookies()
        #expect(jar.cookieHeader(for: from) == "kept=1")
    }

    @Test func cookieSizeLimit() throws {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        let from = testURL("http://example.com/")
        let fits = "a=" + String(repeating: "x", count: CookieJar.maxCookieSize - 2)
        try jar.receive(setCookie: fits, from: from)
        do {
            try jar.receive(setCookie: fits + "; Path=/", from: from)
            Issue.record("stored an oversized cookie")
        } catch {
            #expect(error == .tooLarge("a"))
        }
        #expect(jar.cookies.count == 1)
    }

    @Test func perDomainLimitEvictsTheLeastRecentlyUsed() throws {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        let from = testURL("http://example.com/")
        for index in 0..<CookieJar.maxCookiesPerDomain {
            try jar.receive(setCookie: "c\(index)=1", from: from)
            clock.advance(1)
        }
        // Sending them all leaves creation order to break the tie; storing c0 again then
        // makes c1 the least recently used.
        #expect(jar.cookies(for: testURL("http://example.com/")).count == CookieJar.maxCookiesPerDomain)
        clock.advance(1)
        try jar.receive(setCookie: "c0=again", from: from)
        clock.advance(1)
        try jar.receive(setCookie: "new=1", from: from)
        let names = Set(jar.cookies.map(\.name))
        #expect(jar.cookies.count == CookieJar.maxCookiesPerDomain)
        #expect(!names.contains("c1"))
        #expect(names.contains("c0") && names.contains("c2") && names.contains("new"))
        // Another domain has its own allowance.
        try jar.receive(setCookie: "other=1", from: testURL("http://other.example/"))
        #expect(jar.cookies.count == CookieJar.maxCookiesPerDomain + 1)
    }

    @Test func totalLimitEvictsTheOldestAcrossDomains() throws {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        for index in 0..<CookieJar.maxCookies {
            try jar.receive(setCookie: "c=\(index)", from: testURL("http://h\(index).example/"))
        }
        clock.advance(1)
        try jar.receive(setCookie: "c=last", from: testURL("http://last.example/"))
        #expect(jar.cookies.count == CookieJar.maxCookies)
        #expect(jar.cookieHeader(for: testURL("http://h0.example/")) == nil)
        #expect(jar.cookieHeader(for: testURL("http://h1.example/")) == "c=1")
        #expect(jar.cookieHeader(for: testURL("http://last.example/")) == "c=last")
    }

    @Test func everySetCookieOfAResponse() {
        let clock = ManualCookieClock()
        var jar = clock.jar()
        let headers = HTTPHeaders([("Set-Cookie", "a=1"), ("Content-Type", "text/plain"),
                                   ("set-cookie", "bad"), ("SET-COOKIE", "b=2; Domain=evil.example")  ,
                                   ("Set-Cookie", "c=3")])
        let refused = jar.receive(responseHeaders: headers, from: testURL("http://example.com/"))
        #expect(refused == [.malformed, .domainMismatch("b")])
        #expect(jar.cookieHeader(for: testURL("http://example.com/")) == "a=1; c=3")
    }

    @Test func matchingHelpers() {
        #expect(CookieMatching.defaultPath(requestPath: "/") == "/")
        #expect(CookieMatching.defaultPath(requestPath: "/a") == "/")
        #expect(CookieMatching.defaultPath(requestPath: "/a/") == "/a")
        #expect(CookieMatching.defaultPath(requestPath: "/a/b/c") == "/a/b")
        #expect(CookieMatching.defaultPath(requestPath: "") == "/")
        #expect(CookieMatching.pathMatches(requestPath: "/a/b", cookiePath: "/a"))
        #expect(CookieMatching.pathMatches(requestPath: "/a/b", cookiePath: "/a/"))
        #expect(CookieMatching.pathMatches(requestPath: "/a", cookiePath: "/a"))
        #expect(!CookieMatching.pathMatches(requestPath: "/ab", cookiePath: "/a"))
        #expect(!CookieMatching.pathMatches(requestPath: "/a", cookiePath: "/a/"))
        #expect(CookieMatching.domainMatches(host: "a.b.c", domain: "b.c", hostIsName: true))
        #expect(!CookieMatching.domainMatches(host: "ab.c", domain: "b.c", hostIsName: true))
        #expect(!CookieMatching.domainMatches(host: "1.2.3.4", domain: "3.4", hostIsName: false))
        #expect(CookieMatching.domainMatches(host: "1.2.3.4", domain: "1.2.3.4", hostIsName: false))
    }
}
