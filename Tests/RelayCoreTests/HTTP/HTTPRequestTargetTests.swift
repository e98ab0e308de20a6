import Testing
@testable import RelayCore

@Suite("HTTP request target")
struct HTTPRequestTargetTests {
    @Test func connectAuthorityForm() {
        #expect(RequestTarget.parse(method: "CONNECT", target: "app1.corp.example:443")
            == .success(.authority(RawHost(text: "app1.corp.example", bracketed: false), port: 443)))
        #expect(RequestTarget.parse(method: "CONNECT", target: "[2001:db8::1]:8443")
            == .success(.authority(RawHost(text: "2001:db8::1", bracketed: true), port: 8443)))
        #expect(RequestTarget.parse(method: "CONNECT", target: "10.1.2.3:65535")
            == .success(.authority(RawHost(text: "10.1.2.3", bracketed: false), port: 65535)))
        // No normalisation here: case and trailing dot are the normaliser's business.
        #expect(RequestTarget.parse(method: "CONNECT", target: "App.Corp.:22")
            == .success(.authority(RawHost(text: "App.Corp.", bracketed: false), port: 22)))
    }

    @Test(arguments: [
        ("app.corp", ReasonCode.badTarget),
        ("app.corp:", .badTarget),
        ("app.corp:0", .badTarget),
        ("app.corp:080", .badTarget),
        ("app.corp:65536", .badTarget),
        ("app.corp:99999999999999999999", .badTarget),
        ("app.corp:+80", .badTarget),
        ("app.corp:80:80", .badTarget),
        (":443", .badTarget),
        ("2001:db8::1:443", .badTarget),
        ("[2001:db8::1]", .badTarget),
        ("[2001:db8::1]443", .badTarget),
        ("[2001:db8::1:443", .badTarget),
        ("[]:443", .badTarget),
        ("app.corp:443/x", .badTarget),
        ("http://app.corp:443", .badTarget),
        ("/path", .badTarget),
        ("*", .badTarget),
        ("user@app.corp:443", .ambiguousHost),
        ("app.corp:443#frag", .badTarget),
        ("", .badTarget),
    ])
    func connectRefused(target: String, expected: ReasonCode) {
        #expect(RequestTarget.parse(method: "CONNECT", target: target) == .failure(expected))
    }

    @Test func absoluteForm() {
        #expect(RequestTarget.parse(method: "GET", target: "http://app.corp:8080/x?y=1")
            == .success(.absolute(scheme: "http", RawHost(text: "app.corp"), port: 8080, pathAndQuery: "/x?y=1")))
        #expect(RequestTarget.parse(method: "GET", target: "HTTP://App.Corp/")
            == .success(.absolute(scheme: "http", RawHost(text: "App.Corp"), port: 80, pathAndQuery: "/")))
        #expect(RequestTarget.parse(method: "GET", target: "http://app.corp")
            == .success(.absolute(scheme: "http", RawHost(text: "app.corp"), port: 80, pathAndQuery: "/")))
        #expect(RequestTarget.parse(method: "GET", target: "http://app.corp?q")
            == .success(.absolute(scheme: "http", RawHost(text: "app.corp"), port: 80, pathAndQuery: "/?q")))
        #expect(RequestTarget.parse(method: "POST", target: "https://app.corp/a")
            == .success(.absolute(scheme: "https", RawHost(text: "app.corp"), port: 443, pathAndQuery: "/a")))
        #expect(RequestTarget.parse(method: "GET", target: "http://[::1]:8081/demo")
            == .success(.absolute(scheme: "http", RawHost(text: "::1", bracketed: true), port: 8081, pathAndQuery: "/demo")))
        #expect(RequestTarget.parse(method: "GET", target: "http://a/%2e%2e/x")
            == .success(.absolute(scheme: "http", RawHost(text: "a"), port: 80, pathAndQuery: "/%2e%2e/x")))
    }

    @Test(arguments: [
        ("ftp://app.corp/x", ReasonCode.unsupportedScheme),
        ("ws://app.corp/x", .unsupportedScheme),
        ("http:/app.corp/x", .badTarget),
        ("http:app.corp", .badTarget),
        ("http:///x", .badTarget),
        ("http://:80/x", .badTarget),
        ("http://app.corp:/x", .badTarget),
        ("http://app.corp:0/x", .badTarget),
        ("http://app.corp:65536/x", .badTarget),
        ("http://user:pw@app.corp/x", .ambiguousHost),
        ("http://evil@app.corp/x", .ambiguousHost),
        ("http://app.corp/x#frag", .badTarget),
        ("http://app.corp/x y", .badTarget),
        ("http://app.corp/\u{1}", .badTarget),
        ("1http://app.corp/", .badTarget),
        ("app.corp:80", .badTarget),
        ("*", .badTarget),
        ("", .badTarget),
    ])
    func absoluteRefused(target: String, expected: ReasonCode) {
        #expect(RequestTarget.parse(method: "GET", target: target) == .failure(expected))
    }

    @Test func originAndAsteriskForms() {
        #expect(RequestTarget.parse(method: "GET", target: "/index.html?x") == .success(.origin("/index.html?x")))
        #expect(RequestTarget.parse(method: "OPTIONS", target: "*") == .success(.asterisk))
        #expect(RequestTarget.parse(method: "OPTIONS", target: "/") == .success(.origin("/")))
    }
}
