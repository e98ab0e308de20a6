import Foundation
import RelayClient
import RelayCore
import Testing

extension IntegrationSuite {
    /// Relays that misbehave, failover between relays, and a relay reached over TLS.
    @Suite("HTTP client faults")
    struct HTTPClientFaultTests {
        /// A fake relay: `garbage` answers every request with bytes that are not HTTP,
        /// `stall` reads and never answers.
        static func fakeRelay(_ mode: String) throws -> TLSAppServer {
            let script = #"""
                import socket, sys, threading, time
                port, mode = int(sys.argv[1]), sys.argv[2]
                listener = socket.socket()
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                listener.bind(("127.0.0.1", port))
                listener.listen(16)
                def serve(c):
                    try:
                        while True:
                            data = c.recv(65536)
                            if not data: return
                            if mode == "garbage":
                                c.sendall(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
                    except OSError:
                        return
                while True:
                    c, _ = listener.accept()
                    threading.Thread(target=serve, args=(c,), daemon=True).start()
                """#
            return try TLSAppServer(executable: "/usr/bin/python3") { port in ["-c", script, "\(port)", mode] }
        }

        static func client(relays: [(UInt16, Int)], idle: Duration = .seconds(10)) throws -> RelayHTTPClient {
            let endpoints = try relays.map { RelayEndpoint(url: try ClientURL(parsing: "http://127.0.0.1:\($0.0)"), priority: $0.1) }
            return RelayHTTPClient(configuration: RelayHTTPClientConfiguration(
                relays: endpoints, transport: ClientTransportOptions(connectTimeout: .seconds(5), tlsHandshakeTimeout: .seconds(5),
                                                                     idleTimeout: idle)))
        }

        @Test("a relay answering garbage is bad-response, for absolute-form and CONNECT")
        func garbage() async throws {
            let fake = try Self.fakeRelay("garbage")
            defer { fake.stop() }
            let client = try Self.client(relays: [(fake.port, 1)])
            for url in ["http://127.0.0.1:1/x", "https://127.0.0.1:1/x"] {
                await HTTPClientTests.expectError(.badResponse) { _ = try await client.execute("GET", url) }
            }
        }

        @Test("a relay that stalls ends in a timeout, and a POST is not sent again elsewhere")
        func stall() async throws {
            let fake = try Self.fakeRelay("stall")
            defer { fake.stop() }
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try HTTPClientTests.relay(origin.port)
            defer { relay.stop() }
            let client = try Self.client(relays: [(fake.port, 1), (relay.proxyPort, 2)], idle: .seconds(1))
            let error = await HTTPClientTests.failure {
                _ = try await client.execute("POST", "http://127.0.0.1:\(origin.port)/upload", body: Array("once".utf8))
            }
            #expect(error?.code == .transport, "the POST failed rather than going to the next relay: \(String(describing: error))")
            #expect(error?.transport?.code == .timeout)
            #expect(try relay.audit.events(where: "event LIKE 'request-%'").isEmpty, "the second relay never saw the POST")
        }

        @Test("a relay a tunnel found silent is in back-off for an HTTP client sharing its selector: the POST goes elsewhere")
        func sharedBackoff() async throws {
            let fake = try Self.fakeRelay("stall")
            defer { fake.stop() }
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try HTTPClientTests.relay(origin.port)
            defer { relay.stop() }
            let silent = RelayEndpoint(url: try ClientURL(parsing: "http://127.0.0.1:\(fake.port)"), priority: 1)
            let serving = RelayEndpoint(url: try ClientURL(parsing: "http://127.0.0.1:\(relay.proxyPort)"), priority: 2)
            // A clock that stands still: the back-off cannot run out while the test runs.
            let frozen = ContinuousClock.now
            let selector = RelaySelector([silent, serving], clock: { frozen })
            let transport = ClientTransportOptions(connectTimeout: .seconds(5), tlsHandshakeTimeout: .seconds(5),
                                                   idleTimeout: .seconds(1))

            let tunnel = RelayTunnel(options: RelayTunnelOptions(relays: selector, transport: transport,
                                                                 relayAnswerTimeout: .seconds(1)))
            try await tunnel.connect(host: "127.0.0.1", port: origin.port)
            #expect(tunnel.relay == serving)
            await tunnel.close()
            #expect(selector.backoffEnd(of: silent) != nil, "the tunnel put the silent relay in back-off")

            // Sent to the silent relay first, the POST would time out there and, being
            // neither idempotent nor unsent, fail rather than move on.
            let client = RelayHTTPClient(configuration: RelayHTTPClientConfiguration(relays: selector, transport: transport))
            let response = try await client.execute("POST", "http://127.0.0.1:\(origin.port)/upload", body: Array("once".utf8))
            #expect(response.status == 200)
            #expect(try await HTTPClientTests.text(response) == "POST 4")
            #expect(client.configuration.selector === selector)
        }

        @Test("failover: a relay that is down is skipped for the next priority")
        func failover() async throws {
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try HTTPClientTests.relay(origin.port)
            defer { relay.stop() }
            let down = try TestListener.refusedPort()
            let client = try Self.client(relays: [(down, 1), (relay.proxyPort, 2)])
            for url in ["http://127.0.0.1:\(origin.port)/hello", "http://localhost:\(origin.port)/hello"] {
                let response = try await client.execute("GET", url)
                #expect(response.status == 200)
                #expect(try await HTTPClientTests.text(response).hasPrefix("conn "))
            }
        }

        @Test("an https:// relay: the HTTPS listener verified, then absolute-form and a TLS tunnel inside it")
        func httpsRelay() async throws {
            let certs = try TestCertificates()
            let origin = try TLSScriptedOrigin()
            defer { origin.stop() }
            let relay = try RelayProcess(config: HTTPSListenerTests.config(
                certs, server: try certs.issueServer(), extra: "server localhost:\(origin.port)\n", upstreamPorts: [origin.port]))
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first)
            let endpoint = RelayEndpoint(url: try ClientURL(parsing: "https://127.0.0.1:\(port)"), priority: 1)
            let client = RelayHTTPClient(configuration: RelayHTTPClientConfiguration(
                relays: [endpoint], tls: ClientTLSOptions(caFile: origin.caFile),
                relayTLS: ClientTLSOptions(caFile: certs.caCert), transport: HTTPClientTests.transport))
            for url in ["http://127.0.0.1:\(origin.port)/chunked", "https://localhost:\(origin.port)/chunked"] {
                #expect(try await HTTPClientTests.text(try await client.execute("GET", url)) == "abcdefg", "\(url)")
            }
            let untrusting = RelayHTTPClient(configuration: RelayHTTPClientConfiguration(
                relays: [endpoint], transport: HTTPClientTests.transport))
            let error = await HTTPClientTests.failure { _ = try await untrusting.execute("GET", "http://127.0.0.1:\(origin.port)/hello") }
            #expect(error?.transport?.code == .tlsCertUntrusted, "the relay's certificate is checked: \(String(describing: error))")
        }
    }
}
