import Foundation
import Testing

extension IntegrationSuite {
    /// What an app that keeps URLSession gets on Linux (FoundationNetworking over libcurl),
    /// pinned so docs/clients.md stays true: `connectionProxyDictionary` is ignored and the
    /// request goes straight to the server, unaudited; `http_proxy` and `https_proxy` are
    /// honoured, with Basic credentials from the proxy URL's userinfo.
    @Suite("URLSession on Linux")
    struct URLSessionProxyTests {
        static let program = "example-urlsession"
        /// AuthFixtures.password as URL userinfo: its space and colon percent-encoded.
        static let encodedPassword = "wonder%20land%3A42"

        static func proxyURL(_ port: UInt16, user: String? = AuthFixtures.user, password: String = encodedPassword) -> String {
            "http://" + (user.map { "\($0):\(password)@" } ?? "") + "127.0.0.1:\(port)"
        }

        @Test("connectionProxyDictionary is ignored: the server sees the request directly, the trail has no row")
        func proxyDictionaryGoesDirect() throws {
            let origin = try HTTPOrigin()
            let relay = try AuthFixtures.relay(["auth basic"], servers: ["server 127.0.0.1:\(origin.port)"])
            defer { relay.stop() }

            let direct = try ExampleProgram.run(Self.program, ["--proxy-dictionary", "http://127.0.0.1:\(relay.proxyPort)",
                                                               "http://127.0.0.1:\(origin.port)/direct"])
            #expect(direct.status == 0, "\(direct.stdoutText)\(direct.stderr)")
            #expect(direct.stdoutText == "status: 200\nhello from origin\n")
            let seen = try #require(origin.requests.first)
            #expect(seen.requestLine == "GET /direct HTTP/1.1")
            #expect(seen.header("Via") == nil, "the request did not pass the relay")

            // A request through the relay afterwards: once its row is in, an earlier one would be too.
            let relayed = try ExampleProgram.run(Self.program, ["http://127.0.0.1:\(origin.port)/relayed"],
                                                 environment: ["http_proxy": Self.proxyURL(relay.proxyPort)])
            #expect(relayed.status == 0, "\(relayed.stdoutText)\(relayed.stderr)")
            #expect(origin.requests.dropFirst().first?.header("Via") == "1.1 dynrelay")
            _ = relay.audit.waitForEvents(where: "event = 'request-close'")
            let rows = try relay.audit.events(where: "event IN ('request-open', 'request-close', 'refused')")
            #expect(rows.map { $0["event"] ?? "" } == ["request-open", "request-close"],
                    "only the relayed request is in the trail:\n\(relay.audit.dump())")
        }

        @Test("http_proxy with userinfo: Basic through the relay, audited; no userinfo gets the 407; a Digest-only relay gets Basic anyway")
        func httpProxyVariable() throws {
            let origin = try HTTPOrigin()
            let relay = try AuthFixtures.relay(["auth basic"], servers: ["server 127.0.0.1:\(origin.port)"])
            defer { relay.stop() }
            let url = "http://127.0.0.1:\(origin.port)/env"

            let result = try ExampleProgram.run(Self.program, [url], environment: ["http_proxy": Self.proxyURL(relay.proxyPort)])
            #expect(result.status == 0, "\(result.stdoutText)\(result.stderr)")
            #expect(result.stdoutText == "status: 200\nhello from origin\n")
            #expect(origin.requests.first?.header("Via") == "1.1 dynrelay")
            #expect(origin.requests.first?.header("Proxy-Authorization") == nil)
            let close = relay.audit.waitForEvents(where: "event = 'request-close'")
            #expect(close.first?["principal"] == AuthFixtures.user && close.first?["scheme"] == "Basic", "\(relay.audit.dump())")
            #expect(close.first?["status"] == "200")

            let anonymous = try ExampleProgram.run(Self.program, [url], environment: ["http_proxy": Self.proxyURL(relay.proxyPort, user: nil)])
            #expect(anonymous.stdoutText == "status: 407\nauth-required\n", "the app gets the relay's 407 as the response: \(anonymous.stdoutText)")

            let digest = try AuthFixtures.relay(["auth digest"], servers: ["server 127.0.0.1:\(origin.port)"])
            defer { digest.stop() }
            let unanswered = try ExampleProgram.run(Self.program, [url], environment: ["http_proxy": Self.proxyURL(digest.proxyPort)])
            #expect(unanswered.stdoutText == "status: 407\nunsupported-auth\n",
                    "libcurl answers a Digest challenge with Basic: \(unanswered.stdoutText)")
            Expect.refusedRow(digest, reason: "unsupported-auth", status: 407)
        }

        @Test("https_proxy: https:// goes through CONNECT on the relay, audited; the server's certificate is checked against the system store")
        func httpsProxyVariable() throws {
            let certs = try TestCertificates()
            let app = try certs.issue("app", subject: "/CN=127.0.0.1", san: "IP:127.0.0.1")
            let tlsApp = try TLSAppServer(cert: app.cert, key: app.key)
            defer { tlsApp.stop() }
            let relay = try AuthFixtures.relay(["auth basic"], servers: ["server 127.0.0.1:\(tlsApp.port) sni=any"])
            defer { relay.stop() }

            let result = try ExampleProgram.run(Self.program, ["https://127.0.0.1:\(tlsApp.port)/"],
                                                environment: ["https_proxy": Self.proxyURL(relay.proxyPort)])
            // The test CA is not in the system store, so the handshake through the tunnel fails.
            #expect(result.status == 1 && result.stdoutText.hasPrefix("failed: URLError "), "\(result.stdoutText)\(result.stderr)")
            let open = relay.audit.waitForEvents(where: "event = 'tunnel-open' AND target = ?", ["127.0.0.1:\(tlsApp.port)"])
            #expect(open.first?["principal"] == AuthFixtures.user && open.first?["scheme"] == "Basic", "\(relay.audit.dump())")
        }
    }
}
