import Foundation
import Testing

extension IntegrationSuite {
    /// Keep-alive of the relay's own TLS link to an app server: requests on one client
    /// connection ride one upstream TLS connection, and only requests that want TLS.
    @Suite("relay-originated TLS keep-alive")
    struct UpstreamTLSKeepAliveTests {
        /// Sends `GET url` on `socket` (one client connection to the relay) and reads the answer.
        static func get(_ url: String, host: String, on socket: TestSocket) throws -> RawResponse {
            try socket.write("GET \(url) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
            return try ProxyClient.readResponse(socket)
        }

        /// A keep-alive origin by name and address under one CA, a relay whose rules trust it,
        /// and one client connection to the relay.
        struct Setup {
            let pki: TestPKI
            let origin: TLSAppServer
            let relay: RelayProcess
            let client: TestSocket
            var authority: String { "localhost:\(origin.port)" }

            init() throws {
                pki = try TestPKI()
                let (cert, key) = try pki.issue("app", names: TestPKI.loopbackNames)
                origin = try KeepAliveTLSOrigin.start(cert: cert, key: key)
                relay = try RelayProcess(config: RelayConfigText.proxy(UpstreamTLSTests.rules(origin.port, "ca=\(pki.caFile)")))
                client = try TestSocket.connect(port: relay.proxyPort)
            }

            func stop() {
                client.close()
                relay.stop()
                origin.stop()
            }
        }

        @Test("two https:// requests on one client connection ride one upstream TLS connection")
        func twoRequestsShareTheTLSLink() throws {
            let setup = try Setup()
            defer { setup.stop() }
            let (relay, client, authority) = (setup.relay, setup.client, setup.authority)

            let first = try Self.get("https://\(authority)/one", host: authority, on: client)
            let second = try Self.get("https://\(authority)/two", host: authority, on: client)
            #expect(first.status == 200, "\(first.statusLine) \(first.bodyText)\n\(relay.stderr)")
            #expect(first.bodyText.hasPrefix("tls connection "), "over TLS: \(first.bodyText)")
            let link = first.bodyText.split(separator: " ").prefix(3).joined(separator: " ")
            #expect(second.bodyText == "\(link) request 2\n", "the second request rode the first's link: \(second.bodyText)")

            let rows = relay.audit.waitForEvents(where: "event = 'request-close' AND target = ?", [authority], count: 2)
            #expect(rows.count == 2, "audit:\n\(relay.audit.dump())")
            #expect(rows.allSatisfy { $0["status"] == "200" && $0["tls_version"] == "TLSv1.3" && $0["tls_sni"] == "localhost" },
                    "both rows carry the link's TLS: \(relay.audit.dump())")
        }

        @Test("an http:// request to the same host after an https:// one opens a plain connection, not the TLS link")
        func plainRequestDoesNotRideTheTLSLink() throws {
            let setup = try Setup()
            defer { setup.stop() }
            let (relay, client, authority) = (setup.relay, setup.client, setup.authority)

            let overTLS = try Self.get("https://\(authority)/", host: authority, on: client)
            let plain = try Self.get("http://\(authority)/", host: authority, on: client)
            let again = try Self.get("https://\(authority)/", host: authority, on: client)
            #expect(overTLS.bodyText.hasPrefix("tls connection ") && overTLS.bodyText.hasSuffix(" request 1\n"),
                    "\(overTLS.statusLine) \(overTLS.bodyText)\n\(relay.stderr)")
            #expect(plain.bodyText.hasPrefix("plain connection ") && plain.bodyText.hasSuffix(" request 1\n"),
                    "a fresh plain connection: \(plain.statusLine) \(plain.bodyText)")
            #expect(again.bodyText.hasPrefix("tls connection ") && again.bodyText.hasSuffix(" request 1\n")
                    && again.bodyText != overTLS.bodyText,
                    "the plain link is not reused for TLS either: \(again.bodyText)")

            let rows = relay.audit.waitForEvents(where: "event = 'request-close' AND target = ?", [authority], count: 3)
            #expect(rows.map { $0["tls_version"] ?? "none" } == ["TLSv1.3", "none", "TLSv1.3"], "audit:\n\(relay.audit.dump())")
        }
    }
}
