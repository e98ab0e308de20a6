import Foundation
import Testing

extension IntegrationSuite {
    /// Each example program of docs/clients.md against the real relay and real servers:
    /// its output, its exit status, and the relay's audit rows for what it did.
    @Suite("client guide examples")
    struct ClientExampleTests {
        /// A relay with a plain and an HTTPS listener, `authLines`, alice in its user store,
        /// and `servers` registered.
        static func relay(_ certs: TestCertificates, auth authLines: [String], servers: [String],
                          extra: [String] = []) throws -> RelayProcess {
            let server = try certs.issueServer()
            let config = ["listen 127.0.0.1:0", "listen 127.0.0.1:0 tls cert=\(server.cert) key=\(server.key)",
                          "state-dir {STATE}", "drain-timeout 2s"] + authLines + servers + extra
            return try RelayProcess(config: config.joined(separator: "\n") + "\n") { path in
                try AuthFixtures.addUser(AuthFixtures.user, password: AuthFixtures.password, config: path)
            }
        }

        static func credentials() -> [String: String] {
            ["DYNRELAY_USER": AuthFixtures.user, "DYNRELAY_PASSWORD": AuthFixtures.password]
        }

        /// Runs `program`, which the relay must refuse: exit status 1, exactly `output`, and
        /// the relay's `refused` row with `reason` and `status`.
        static func expectRefused(_ program: String, _ arguments: [String], environment: [String: String], output: String,
                                  relay: RelayProcess, reason: String, status: Int,
                                  sourceLocation: SourceLocation = #_sourceLocation) throws {
            let result = try ExampleProgram.run(program, arguments, environment: environment)
            #expect(result.status == 1, sourceLocation: sourceLocation)
            #expect(result.stdoutText == output, "\(result.stdoutText)\(result.stderr)", sourceLocation: sourceLocation)
            Expect.refusedRow(relay, reason: reason, status: status, sourceLocation: sourceLocation)
        }

        @Test("RelayTunnel: a dead priority-1 relay, then the HTTPS listener with Basic; an unregistered host is relay-refused 403")
        func relayTunnel() throws {
            let certs = try TestCertificates()
            let echo = try EchoServer()
            let relay = try Self.relay(certs, auth: ["auth basic"], servers: ["server 127.0.0.1:\(echo.port)"])
            defer { relay.stop() }
            let tlsPort = try #require(relay.tlsPorts.first)
            let down = try TestListener.refusedPort()
            let environment = Self.credentials().merging([
                "DYNRELAY_RELAYS": "http://127.0.0.1:\(down);priority=1,https://127.0.0.1:\(tlsPort);priority=2",
                "DYNRELAY_RELAY_CA": certs.caCert,
            ]) { _, new in new }

            let result = try ExampleProgram.run("example-relay-tunnel", ["127.0.0.1", "\(echo.port)", "hello"],
                                                environment: environment)
            #expect(result.status == 0, "\(result.stdoutText)\(result.stderr)")
            #expect(result.stdoutText == "open through https://127.0.0.1:\(tlsPort);priority=2\nreply: hello\n")
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close'")
            #expect(close.first?["principal"] == AuthFixtures.user && close.first?["scheme"] == "Basic", "\(relay.audit.dump())")
            #expect(close.first?["bytes_up"] == "6" && close.first?["bytes_down"] == "6", "\(relay.audit.dump())")
            #expect(close.first?["client_tls_version"] != nil, "the tunnel came through the HTTPS listener")

            try Self.expectRefused("example-relay-tunnel", ["127.0.0.9", "1"], environment: environment,
                                   output: "the relay refused 127.0.0.9:1\nfailed: relay-refused status=403 reason=not-registered\n",
                                   relay: relay, reason: "not-registered", status: 403)
        }

        @Test("TunnelSocket: onOpen, onRead, onClose with Digest; a wrong password reaches onErr as proxy-auth-failed")
        func tunnelSocket() throws {
            let certs = try TestCertificates()
            let echo = try EchoServer()
            let relay = try Self.relay(certs, auth: ["auth digest"], servers: ["server 127.0.0.1:\(echo.port)"])
            defer { relay.stop() }
            var environment = Self.credentials()
            environment["DYNRELAY_RELAYS"] = "http://127.0.0.1:\(relay.proxyPort)"

            let result = try ExampleProgram.run("example-tunnel-socket", ["127.0.0.1", "\(echo.port)", "ping"],
                                                environment: environment)
            #expect(result.status == 0, "\(result.stdoutText)\(result.stderr)")
            #expect(result.stdoutText == "open through http://127.0.0.1:\(relay.proxyPort);priority=1\nread: ping\nclosed\n")
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close'")
            #expect(close.first?["principal"] == AuthFixtures.user && close.first?["scheme"] == "Digest", "\(relay.audit.dump())")
            #expect(close.first?["bytes_up"] == "5", "\(relay.audit.dump())")

            environment["DYNRELAY_PASSWORD"] = "not the password"
            try Self.expectRefused("example-tunnel-socket", ["127.0.0.1", "\(echo.port)"], environment: environment,
                                   output: "failed: proxy-auth-failed status=407 reason=auth-failed\n",
                                   relay: relay, reason: "bad-password", status: 407)
        }

        @Test("RelayHTTPClient: http:// in absolute form and https:// through CONNECT via the HTTPS listener; not-registered is typed")
        func httpClient() throws {
            let certs = try TestCertificates()
            let origin = try HTTPOrigin()
            let app = try certs.issue("app", subject: "/CN=127.0.0.1", san: "IP:127.0.0.1")
            let tlsApp = try TLSAppServer(cert: app.cert, key: app.key)
            defer { tlsApp.stop() }
            let relay = try Self.relay(certs, auth: ["auth basic"],
                                       servers: ["server 127.0.0.1:\(origin.port)", "server 127.0.0.1:\(tlsApp.port) sni=any"])
            defer { relay.stop() }
            let tlsPort = try #require(relay.tlsPorts.first)
            let environment = Self.credentials().merging([
                "DYNRELAY_RELAYS": "https://127.0.0.1:\(tlsPort)", "DYNRELAY_RELAY_CA": certs.caCert, "APP_CA": certs.caCert,
            ]) { _, new in new }

            let plain = try ExampleProgram.run("example-http-client", ["http://127.0.0.1:\(origin.port)/hello"],
                                               environment: environment)
            #expect(plain.status == 0, "\(plain.stdoutText)\(plain.stderr)")
            #expect(plain.stdoutText == "status: 200\nhello from origin\n")
            let request = relay.audit.waitForEvents(where: "event = 'request-close'")
            #expect(request.first?["status"] == "200" && request.first?["principal"] == AuthFixtures.user, "\(relay.audit.dump())")

            let tls = try ExampleProgram.run("example-http-client", ["https://127.0.0.1:\(tlsApp.port)/"], environment: environment)
            #expect(tls.status == 0, "\(tls.stdoutText)\(tls.stderr)")
            #expect(tls.stdoutText.hasPrefix("status: 200\n") && tls.stdoutText.contains(TLSOrigin.greeting), "\(tls.stdoutText)")
            let tunnel = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", ["127.0.0.1:\(tlsApp.port)"])
            #expect(tunnel.first?["principal"] == AuthFixtures.user, "\(relay.audit.dump())")

            try Self.expectRefused("example-http-client", ["http://127.0.0.9:1/"], environment: environment,
                                   output: "the relay refused http://127.0.0.9:1/\nfailed: relay-refused status=403 reason=not-registered\n",
                                   relay: relay, reason: "not-registered", status: 403)
        }

        @Test("RelayHTTPRequest: every readyState in order, the status, a header and the body; the request header reaches the origin")
        func httpRequest() throws {
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(origin.port)"]))
            defer { relay.stop() }
            let result = try ExampleProgram.run("example-http-request", ["http://127.0.0.1:\(origin.port)/hello"],
                                                environment: ["DYNRELAY_RELAYS": "http://127.0.0.1:\(relay.proxyPort)"])
            #expect(result.status == 0, "\(result.stdoutText)\(result.stderr)")
            let lines = result.stdoutText.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(Array(lines.prefix(6)) == ["readyState: OPENED", "readyState: SENT", "readyState: HEADERS_RECEIVED",
                                               "readyState: LOADING", "readyState: DONE", "status: 200 OK"], "\(lines)")
            #expect(lines.dropFirst(6).first?.hasPrefix("Content-Type: ") == true)
            #expect(result.stdoutText.hasSuffix("\nhello from origin\n"), "\(result.stdoutText)")
            #expect(origin.requests.first?.header("Accept") == "text/plain")
            let close = relay.audit.waitForEvents(where: "event = 'request-close'")
            #expect(close.first?["status"] == "200", "\(relay.audit.dump())")

            let refused = try ExampleProgram.run("example-http-request", ["http://127.0.0.9:1/"],
                                                 environment: ["DYNRELAY_RELAYS": "http://127.0.0.1:\(relay.proxyPort)"])
            #expect(refused.status == 1)
            #expect(refused.stdoutText.hasSuffix("readyState: DONE\nfailed: relay-refused status=403 reason=not-registered\n"),
                    "\(refused.stdoutText)\(refused.stderr)")
        }

        @Test("RelayInfrastructure: each relay's status in priority order, then the configuration with Basic")
        func relayInfrastructure() throws {
            let certs = try TestCertificates()
            let relay = try Self.relay(certs, auth: ["auth basic"], servers: ["server app1.corp.example:443"],
                                       extra: ["instance edge-2"])
            defer { relay.stop() }
            let down = try TestListener.refusedPort()
            var environment = Self.credentials()
            environment["DYNRELAY_RELAYS"] = "http://127.0.0.1:\(down),http://127.0.0.1:\(relay.proxyPort)"

            let result = try ExampleProgram.run("example-relay-infrastructure", environment: environment)
            #expect(result.status == 0, "\(result.stdoutText)\(result.stderr)")
            let lines = result.stdoutText.split(separator: "\n").map(String.init)
            let live = "http://127.0.0.1:\(relay.proxyPort);priority=2"
            #expect(lines.count == 3, "\(lines)")
            #expect(lines.first == "http://127.0.0.1:\(down);priority=1: relay-unreachable")
            #expect(lines.dropFirst().first == "\(live): ok version=0.1.0 instance=edge-2")
            let prefix = "config from \(live): "
            let config = try #require(lines.last.flatMap { $0.hasPrefix(prefix) ? String($0.dropFirst(prefix.count)) : nil })
            let json = try #require(try JSONSerialization.jsonObject(with: Data(config.utf8)) as? [String: Any])
            #expect(json["principal"] as? String == AuthFixtures.user && json["scheme"] as? String == "Basic")
            #expect((json["servers"] as? [[String: Any]])?.first?["host"] as? String == "app1.corp.example")
            #expect(relay.audit.waitForEvents(where: "reason = 'relay-status'").count == 1, "\(relay.audit.dump())")
            let configRow = relay.audit.waitForEvents(where: "reason = 'relay-config'")
            #expect(configRow.first?["principal"] == AuthFixtures.user, "\(relay.audit.dump())")
        }
    }
}
