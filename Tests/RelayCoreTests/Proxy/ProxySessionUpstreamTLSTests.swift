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
}
