import Testing
@testable import RelayCore

/// When the relay speaks TLS to the app server itself: an `https://` request, or any
/// forwarded request to a rule marked `tls`; never a tunnel, whose TLS is the client's.
@Suite struct ProxySessionUpstreamTLSTests {
    static let config = """
    listen 127.0.0.1:0
    state-dir /tmp/unused
    server 10.1.2.3:443
    server 10.1.2.4:80 tls
    server app.corp.example:80-443
    """

    static func session() throws -> ProxySession {
        let config = try ConfigParser.parse(text: config, file: "tls.conf") { _, _ in [] }
        return ProxySession(settings: ProxySession.Settings(registry: config.registry))
    }

    @Test func httpsRequestConnectsToPort443WithTLSToItsHost() throws {
        var session = try Self.session()
        let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes("GET https://10.1.2.3/a HTTP/1.1\r\nHost: 10.1.2.3\r\n\r\n"))
        #expect(actions.contains(.connect(.v4(IPv4Address(strict: "10.1.2.3")!), port: 443)))
        #expect(session.upstreamTLSServer?.host == .ipv4(IPv4Address(strict: "10.1.2.3")!))
        #expect(session.upstreamTLSServer?.rule == "tls.conf:3")
        _ = session.handle(.upstreamConnected, now: 2)
        var sent: [UInt8] = []
        for case .sendToUpstream(let part) in session.handle(.auditCommitted, now: 3) { sent += part }
        let head = String(decoding: sent, as: UTF8.self)
        #expect(head.hasPrefix("GET /a HTTP/1.1\r\n"))
        #expect(head.contains("\r\nHost: 10.1.2.3\r\n"), "the default https port is left out of Host")
        #expect(session.upstreamTLSServer == nil, "asked only while opening")
    }

    @Test func plainRequestToARuleMarkedTLSGoesOverTLS() throws {
        var session = try Self.session()
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("GET http://10.1.2.4/ HTTP/1.1\r\nHost: 10.1.2.4\r\n\r\n"))
        #expect(session.upstreamTLSServer?.rule == "tls.conf:4")
    }

    @Test func plainRequestAndTunnelsStayPlain() throws {
        var plain = try Self.session()
        _ = ProxySessionTests.feed(&plain, ProxySessionTests.bytes("GET http://10.1.2.3:443/ HTTP/1.1\r\nHost: 10.1.2.3:443\r\n\r\n"))
        #expect(plain.upstreamTLSServer == nil)
        var tunnel = try Self.session()
        _ = ProxySessionTests.feed(&tunnel, ProxySessionTests.bytes("CONNECT 10.1.2.4:80 HTTP/1.1\r\nHost: 10.1.2.4:80\r\n\r\n"))
        #expect(tunnel.upstreamTLSServer == nil, "a tunnel's TLS is the client's own")
    }

    /// A kept-alive plain link is not reused for an `https://` request to the same host and
    /// port.
    @Test func keptAliveLinkIsReusedOnlyForTheSameTLS() throws {
        var session = try Self.session()
        let address = IPAddress.v4(IPv4Address(strict: "10.1.2.3")!)
        _ = ProxySessionTests.forwarded(&session, "GET http://10.1.2.3:443/ HTTP/1.1\r\nHost: 10.1.2.3:443\r\n\r\n")
        let response = ProxySessionTests.upstream(&session, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(!response.contains(.closeUpstream), "kept alive")
        let again = ProxySessionTests.feed(&session, ProxySessionTests.bytes("GET http://10.1.2.3:443/b HTTP/1.1\r\nHost: 10.1.2.3:443\r\n\r\n"))
        #expect(!again.contains(.connect(address, port: 443)), "a plain request reuses the plain link")
        _ = session.handle(.auditCommitted, now: 4)
        _ = ProxySessionTests.upstream(&session, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        let secure = ProxySessionTests.feed(&session, ProxySessionTests.bytes("GET https://10.1.2.3/ HTTP/1.1\r\nHost: 10.1.2.3\r\n\r\n"))
        #expect(secure.contains(.closeUpstream), "the plain link is not reused for TLS")
        #expect(secure.contains(.connect(address, port: 443)))
        #expect(session.upstreamTLSServer != nil)
    }

    /// A kept-alive TLS link was set up under its rule's `ca=`, `verify=` and
    /// `tls-versions=`: after a reload that changes them the next request opens a new link;
    /// after one that keeps them it reuses the link.
    @Test func keptAliveTLSLinkIsNotReusedUnderChangedTLSTerms() throws {
        var session = try Self.session()
        let address = IPAddress.v4(IPv4Address(strict: "10.1.2.4")!)
        let request = "GET http://10.1.2.4/ HTTP/1.1\r\nHost: 10.1.2.4\r\n\r\n"
        _ = ProxySessionTests.forwarded(&session, request)
        _ = ProxySessionTests.upstream(&session, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        func reload(_ options: String) throws {
            let text = Self.config.replacingOccurrences(of: "server 10.1.2.4:80 tls", with: "server 10.1.2.4:80 tls" + options)
            session.useRegistry(try ConfigParser.parse(text: text, file: "tls.conf") { _, _ in [] }.registry)
        }
        try reload("")
        let same = ProxySessionTests.feed(&session, ProxySessionTests.bytes(request))
        #expect(!same.contains(.connect(address, port: 80)), "the same terms reuse the link")
        _ = session.handle(.auditCommitted, now: 4)
        _ = ProxySessionTests.upstream(&session, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        for (index, options) in [" tls-versions=1.3", " verify=off", " ca=/etc/ssl/other.pem"].enumerated() {
            try reload(options)
            let changed = ProxySessionTests.feed(&session, ProxySessionTests.bytes(request))
            #expect(changed.contains(.closeUpstream), "\(options): the link set up under other terms is dropped")
            #expect(changed.contains(.connect(address, port: 80)), "\(options)")
            _ = session.handle(.upstreamConnected, now: UInt64(5 + 3 * index))
            _ = session.handle(.auditCommitted, now: UInt64(6 + 3 * index))
            _ = ProxySessionTests.upstream(&session, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        }
    }
}
