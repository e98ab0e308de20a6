import Testing
@testable import RelayCore

@Suite("Client URL")
struct ClientURLTests {
    @Test(arguments: [
        ("http://App.Example.COM./a/b?x=1#frag", "http", "app.example.com", 80, "/a/b?x=1", "http://app.example.com/a/b?x=1"),
        ("HTTPS://example.com", "https", "example.com", 443, "/", "https://example.com/"),
        ("https://example.com:8443?q", "https", "example.com", 8443, "/?q", "https://example.com:8443/?q"),
        ("http://example.com:80/", "http", "example.com", 80, "/", "http://example.com/"),
        ("http://[2001:DB8::1]:8080/x", "http", "[2001:db8::1]", 8080, "/x", "http://[2001:db8::1]:8080/x"),
        ("http://10.0.0.1/", "http", "10.0.0.1", 80, "/", "http://10.0.0.1/"),
        ("http://xn--bcher-kva.example/", "http", "xn--bcher-kva.example", 80, "/", "http://xn--bcher-kva.example/"),
        ("http://a/b/../c/./d?e/../f", "http", "a", 80, "/c/d?e/../f", "http://a/c/d?e/../f"),
        ("http://a/caf\u{E9}?q=\u{E9}", "http", "a", 80, "/caf%C3%A9?q=%C3%A9", "http://a/caf%C3%A9?q=%C3%A9"),
    ])
    func parses(text: String, scheme: String, host: String, port: Int, target: String, description: String) throws {
        let url = try ClientURL(parsing: text)
        #expect(url.scheme.rawValue == scheme)
        #expect(url.host.description == host)
        #expect(url.port == UInt16(port))
        #expect(url.target == target)
        #expect(url.description == description)
    }

    @Test(arguments: [
        ("ftp://example.com/", "unsupported-scheme"),
        ("mailto:someone@example.com", "unsupported-scheme"),
        ("javascript:alert(1)", "unsupported-scheme"),
        ("http://user:pw@example.com/", "userinfo"),
        ("http://example.com@evil.example/", "userinfo"),
        ("http://example.com:0/", "bad-port"),
        ("http://example.com:65536/", "bad-port"),
        ("http://example.com:080/", "bad-port"),
        ("http://example.com:/", "bad-port"),
        ("http://example.com:8a/", "bad-port"),
        ("http://example.com/a b", "control-character"),
        ("http://example.com/a\tb", "control-character"),
        ("http://example.com/\u{7F}", "control-character"),
        ("http://exa\u{0}mple.com/", "control-character"),
        ("http:///path", "missing-host"),
        ("http://:80/", "missing-host"),
        ("http://[]/", "missing-host"),
        ("http://b\u{FC}cher.example/", "bad-host"),
        ("http://0x7f.1/", "bad-host"),
        ("http://127.1/", "bad-host"),
        ("http://[::1/", "bad-host"),
        ("http://[fe80::1%25eth0]/", "bad-host"),
        ("http://::1/", "missing-host"),
        ("http://-bad-.example/", "bad-host"),
        ("http:/example.com/", "malformed-url"),
        ("example.com/path", "malformed-url"),
        ("/relative", "malformed-url"),
        ("http://evil\\@good/", "malformed-url"),
        ("", "malformed-url"),
    ])
    func refuses(text: String, code: String) {
        #expect(throws: ClientURLError.self) { try ClientURL(parsing: text) }
        do {
            _ = try ClientURL(parsing: text)
        } catch {
            #expect(error.code == code, "\(text): \(error)")
        }
    }

    @Test func originIgnoresPathAndCompletesThePort() throws {
        let a = try ClientURL(parsing: "http://example.com/a")
        let b = try ClientURL(parsing: "HTTP://EXAMPLE.com:80/b?c")
        #expect(a.origin == b.origin)
        #expect(a.origin.description == "http://example.com:80")
        #expect(try ClientURL(parsing: "https://example.com/a").origin != a.origin)
        #expect(try ClientURL(parsing: "http://example.com:8080/a").origin != a.origin)
        #expect(try ClientURL(parsing: "http://www.example.com/a").origin != a.origin)
    }

    @Test func fromAnOriginAndATarget() throws {
        let relay = try ClientURL(parsing: "https://[::1]:8443/")
        let status = try ClientURL(origin: relay.origin, target: "/.well-known/dynrelay/status")
        #expect(status.description == "https://[::1]:8443/.well-known/dynrelay/status")
        #expect(status.origin == relay.origin)
        #expect(throws: ClientURLError.self) { try ClientURL(origin: relay.origin, target: "status") }
        #expect(throws: ClientURLError.controlCharacter) { try ClientURL(origin: relay.origin, target: "/a b") }
    }

    @Test func partsForTheWire() throws {
        let url = try ClientURL(parsing: "https://[::1]:8443/dir/file?x=1&y")
        #expect(url.authority == "[::1]:8443")
        #expect(url.path == "/dir/file")
        #expect(url.query == "x=1&y")
        #expect(url.cookieHost == "::1")
        let plain = try ClientURL(parsing: "https://example.com/")
        #expect(plain.authority == "example.com")
        #expect(plain.query == nil)
    }
}
