import Foundation
import Testing

extension IntegrationSuite {
    /// curl as the client of an inspected tunnel: `https://` through `-x http://relay` opens a
    /// CONNECT tunnel and runs its own TLS inside, offering what `--tlsv1.x` and `--tls-max`
    /// allow; the rule's versions keep or refuse it, by the ClientHello or by the ServerHello.
    @Suite("curl through inspected tunnels")
    struct TunnelTLSCurlTests {
        /// One curl run and what must come of it.
        struct Case: Sendable, CustomStringConvertible {
            var options: [String]
            /// nil: kept; else the start of its close row's `reason`.
            var refusedWith: String?
            var description: String { "curl \(options.joined(separator: " "))" }
        }

        @Test("a rule allowing only TLS 1.2: --tls-max 1.2 is kept, --tlsv1.3 is refused by its hello, a default curl by the ServerHello's 1.3")
        func versionsAgainstARule() throws {
            let certificate = try TestCertificate()
            let server = try OpenSSLServer(certificate: certificate)
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "server localhost:\(server.port) tls-versions=1.2",
                "server 127.0.0.1:\(server.port) tls-versions=1.2",
            ]))
            defer { relay.stop() }
            let cases = [
                Case(options: ["--tlsv1.2", "--tls-max", "1.2"]),
                Case(options: ["--tlsv1.3"], refusedWith: "tls-version-refused: offered=1.3"),
                Case(options: [], refusedWith: "tls-version-refused: negotiated=1.3"),
                Case(options: ["--tlsv1.2"], refusedWith: "tls-version-refused: negotiated=1.3"),
                Case(options: ["--tls-max", "1.2"]),
            ]
            for (index, item) in cases.enumerated() {
                let run = try Curl.run(["-p", "-x", "http://127.0.0.1:\(relay.proxyPort)", "-k"] + item.options
                                       + ["https://localhost:\(server.port)/"], maxTime: 20)
                let closes = relay.audit.waitForEvents(where: "event = 'tunnel-close'", count: index + 1)
                try #require(closes.count == index + 1, "\(item): audit:\n\(relay.audit.dump())")
                let row = closes[index]
                if let reason = item.refusedWith {
                    #expect(run.status != 0, "\(item): must fail; \(run.stdoutText)")
                    #expect(row["reason"]?.hasPrefix(reason) == true, "\(item): \(row)")
                    #expect(row["bytes_down"] == "0", "\(item): nothing of the server reached the client: \(row)")
                } else {
                    #expect(run.status == 0, "\(item): \(run.stderr)")
                    #expect(run.stdoutText.contains("s_server"), "\(item): the server's page came back")
                    #expect(row["reason"] == "completed", "\(item): \(row)")
                    #expect(row["tls_version"] == "TLSv1.2", "\(item): \(row)")
                    #expect(row["tls_sni"] == "localhost", "\(item): \(row)")
                }
            }
        }
    }
}
