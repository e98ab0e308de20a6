import Foundation
import Testing

extension IntegrationSuite {
    /// Default deny, explicit deny, ambiguous literals and the address guard.
    @Suite("refusals")
    struct RefusalTests {
        @Test("unregistered host: 403 not-registered, audited")
        func unregistered() throws {
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(origin.port)"]))
            defer { relay.stop() }
            let result = try Curl.run(["-x", "http://127.0.0.1:\(relay.proxyPort)", "-w", "%{http_code}", "http://unregistered.example/"])
            #expect(result.stdoutText == "not-registered\n403", "curl: \(result.stdoutText) \(result.stderr)")
            let (_, response) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "unregistered.example:443")
            Expect.refusal(response, status: 403, reason: "not-registered")
            Expect.refusedRow(relay, reason: "not-registered", status: 403, target: "unregistered.example:443")
            #expect(origin.connections == 0)
        }

        @Test("deny wins over server: 403 denied naming the deny rule")
        func denyWins() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "server 127.0.0.0/8:*",
                "deny 127.0.0.1:\(echo.port)   # wins over the CIDR above",
            ]))
            defer { relay.stop() }
            let (_, response) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "127.0.0.1:\(echo.port)")
            Expect.refusal(response, status: 403, reason: "denied")
            let row = Expect.refusedRow(relay, reason: "denied", status: 403, target: "127.0.0.1:\(echo.port)")
            #expect(row?["rule"] == relay.rule(containing: "deny 127.0.0.1"))
            #expect(echo.connections == 0, "a denied target must never be connected to")
        }

        /// Each is an attempt to name 127.0.0.1 (registered) in a form a lenient parser would
        /// accept; the relay must refuse rather than guess.
        static let ambiguousHosts = [
            "2130706433", "0177.0.0.1", "0x7f.0.0.1", "0x7f000001", "127.1", "127.0.0.01",
            "[::ffff:127.0.0.1]", "[::1%25lo]", "[fe80::1%lo]", "127.0.0.%31", "%31%32%37.0.0.1",
        ]

        @Test("ambiguous host literals: 400 ambiguous-host, never connected")
        func ambiguousHosts() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(echo.port)"]))
            defer { relay.stop() }
            for host in Self.ambiguousHosts {
                let (_, response) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "\(host):\(echo.port)")
                #expect(response.status == 400, "CONNECT \(host): \(response.statusLine)")
                #expect(response.bodyText == "ambiguous-host\n", "CONNECT \(host): \(response.bodyText)")
            }
            // The same refusal for absolute-form requests.
            let (forwarded, _) = try ProxyClient.exchange(relayPort: relay.proxyPort,
                "GET http://0x7f.0.0.1:\(echo.port)/ HTTP/1.1\r\nHost: 0x7f.0.0.1:\(echo.port)\r\n\r\n")
            Expect.refusal(forwarded, status: 400, reason: "ambiguous-host")
            let rows = relay.audit.waitForEvents(where: "event = 'refused' AND reason = 'ambiguous-host'", count: Self.ambiguousHosts.count + 1)
            #expect(rows.count == Self.ambiguousHosts.count + 1, "one refused row per attempt; audit:\n\(relay.audit.dump())")
            #expect(echo.connections == 0)
        }

        @Test("a registered NAME resolving to loopback: 403 guarded-address")
        func guardedAddress() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server localhost:\(echo.port)"]))
            defer { relay.stop() }
            let (_, response) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "localhost:\(echo.port)")
            Expect.refusal(response, status: 403, reason: "guarded-address")
            Expect.refusedRow(relay, reason: "guarded-address", status: 403, target: "localhost:\(echo.port)")
            #expect(echo.connections == 0, "the guard applies before connecting")
        }

        @Test("ftp absolute-form: 501; origin-form to the proxy: 400 not-a-proxy-request")
        func notProxyable() throws {
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:443"]))
            defer { relay.stop() }
            let (ftp, _) = try ProxyClient.exchange(relayPort: relay.proxyPort, "GET ftp://127.0.0.1:443/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            Expect.refusal(ftp, status: 501, reason: "unsupported-scheme")
            let (origin, _) = try ProxyClient.exchange(relayPort: relay.proxyPort, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            Expect.refusal(origin, status: 400, reason: "not-a-proxy-request")
            Expect.refusedRow(relay, reason: "not-a-proxy-request", status: 400)
        }
    }
}
