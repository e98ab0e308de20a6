import Testing
@testable import RelayCore

@Suite("Redirect policy")
struct RedirectPolicyTests {
    static let credentials = HTTPHeaders([
        ("Authorization", "Basic dXNlcjpwYXNz"), ("Cookie", "sid=1"), ("X-Api-Key", "secret"),
        ("Accept", "*/*"), ("Content-Type", "application/json"), ("Content-Length", "2"),
    ])

    static func request(_ method: String, _ url: String, body: RequestBodyKind = .replayable) -> RedirectRequest {
        RedirectRequest(method: method, url: testURL(url), headers: credentials, body: body, originBoundHeaders: ["x-api-key"])
    }

    @Test(arguments: [
        (301, "POST", "GET", RequestBodyKind.none), (302, "POST", "GET", .none), (303, "POST", "GET", .none),
        (301, "PUT", "PUT", .replayable), (302, "DELETE", "DELETE", .replayable), (303, "PUT", "GET", .none),
        (303, "HEAD", "HEAD", .replayable), (303, "GET", "GET", .none),
        (307, "POST", "POST", .replayable), (308, "PUT", "PUT", .replayable), (308, "GET", "GET", .replayable),
    ])
    func methodAndBody(status: Int, method: String, nextMethod: String, nextBody: RequestBodyKind) throws {
        let next = try #require(try RedirectPolicy().next(after: Self.request(method, "http://a.example/form"),
                                                          status: status, location: "/done", redirectsFollowed: 0))
        #expect(next.method == nextMethod)
        #expect(next.body == nextBody)
        #expect(next.url.description == "http://a.example/done")
        let bodyHeadersKept = next.headers.contains("Content-Type") && next.headers.contains("Content-Length")
        #expect(bodyHeadersKept == (nextBody != .none))
        // Same origin: every credential stays.
        #expect(next.headers.first("Authorization") == "Basic dXNlcjpwYXNz")
        #expect(next.headers.first("X-Api-Key") == "secret")
    }

    @Test(arguments: [
        "http://b.example/x", "https://a.example/x", "http://a.example:8080/x", "//b.example/x",
    ])
    func credentialsNeverCrossOrigins(location: String) throws {
        let next = try #require(try RedirectPolicy().next(after: Self.request("GET", "http://a.example/"),
                                                          status: 302, location: location, redirectsFollowed: 0))
        #expect(!next.headers.contains("Authorization"))
        #expect(!next.headers.contains("Cookie"))
        #expect(!next.headers.contains("X-Api-Key"))
        #expect(next.headers.first("Accept") == "*/*")
        // Back to the first origin: what was dropped stays dropped.
        let back = try #require(try RedirectPolicy(allowsHTTPSDowngrade: true)
            .next(after: next, status: 302, location: "http://a.example/", redirectsFollowed: 1))
        #expect(!back.headers.contains("Authorization"))
    }

    @Test func downgradeIsRefusedUnlessAllowed() throws {
        let request = Self.request("GET", "https://a.example/")
        #expect(throws: RedirectError.insecureRedirect) {
            try RedirectPolicy().next(after: request, status: 301, location: "http://a.example/", redirectsFollowed: 0)
        }
        let next = try RedirectPolicy(allowsHTTPSDowngrade: true)
            .next(after: request, status: 301, location: "http://a.example/", redirectsFollowed: 0)
        #expect(next?.url.description == "http://a.example/")
        #expect(next?.headers.contains("Authorization") == false)
    }

    @Test func hopLimit() throws {
        let request = Self.request("GET", "http://a.example/")
        #expect(try RedirectPolicy().next(after: request, status: 302, location: "/", redirectsFollowed: 9) != nil)
        #expect(throws: RedirectError.tooManyRedirects) {
            try RedirectPolicy().next(after: request, status: 302, location: "/", redirectsFollowed: 10)
        }
        #expect(throws: RedirectError.tooManyRedirects) {
            try RedirectPolicy(maxRedirects: 0).next(after: request, status: 302, location: "/", redirectsFollowed: 0)
        }
    }

    @Test func aOneShotBodyCannotBeResent() throws {
        let request = Self.request("POST", "http://a.example/", body: .oneShot)
        #expect(throws: RedirectError.bodyNotReplayable) {
            try RedirectPolicy().next(after: request, status: 307, location: "/again", redirectsFollowed: 0)
        }
        // A redirect that drops the body does not need it again.
        #expect(try RedirectPolicy().next(after: request, status: 303, location: "/done", redirectsFollowed: 0)?.body == RequestBodyKind.none)
    }

    @Test(arguments: [
        ("ftp://a.example/", "unsupported-scheme"), ("http://user@b.example/", "userinfo"),
        ("http://a.example:0/", "bad-port"), ("/a b", "control-character"), ("http:///x", "missing-host"),
    ])
    func aLocationThatDoesNotParseStops(location: String, code: String) {
        do {
            let next = try RedirectPolicy().next(after: Self.request("GET", "http://a.example/"), status: 302,
                                                 location: location, redirectsFollowed: 0)
            Issue.record("followed to \(String(describing: next))")
        } catch {
            #expect(error.code == "bad-location")
            #expect(error.urlError?.code == code)
        }
    }

    @Test func notARedirectIsDelivered() throws {
        let request = Self.request("GET", "http://a.example/")
        for status in [200, 300, 304, 305, 306, 399, 404] {
            #expect(try RedirectPolicy().next(after: request, status: status, location: "/x", redirectsFollowed: 0) == nil)
        }
        #expect(try RedirectPolicy().next(after: request, status: 302, location: nil, redirectsFollowed: 0) == nil)
    }
}
