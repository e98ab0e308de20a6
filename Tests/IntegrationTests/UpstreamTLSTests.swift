import Foundation
import Glibc
import Testing

extension IntegrationSuite {
    /// The relay's own TLS to app servers: `https://` absolute-form requests and `http://`
    /// requests to a rule marked `tls`, against `openssl s_server -www` with certificates
    /// made per test by a throwaway CA that the rules trust through `ca=`.
    @Suite("relay-originated TLS")
    struct UpstreamTLSTests {
        /// Both the name and the address of the server registered: the name is what the
        /// request asks for, the address lifts the loopback guard for it.
        static func rules(_ port: UInt16, _ options: String) -> [String] {
            ["server localhost:\(port) \(options)", "server 127.0.0.1:\(port) \(options)"]
        }

        /// `GET url` in absolute form on a fresh connection to the relay; the answer.
        static func get(_ url: String, host: String, through relay: RelayProcess) throws -> RawResponse {
            let (response, socket) = try ProxyClient.exchange(relayPort: relay.proxyPort,
                                                              "GET \(url) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
            socket.close()
            return response
        }

        /// The request-close row of the exchange with `target`.
        static func closeRow(_ relay: RelayProcess, target: String, count: Int = 1) -> AuditRow? {
            let rows = relay.audit.waitForEvents(where: "event = 'request-close' AND target = ?", [target], count: count)
            return rows.count >= count ? rows.last : nil
        }

        @Test("https:// by name: verified TLS with SNI, 200 with the server's page, the row names version, cipher, SNI; the next connection resumes")
        func httpsByNameResumes() throws {
            let pki = try TestPKI()
            let (cert, key) = try pki.issue("app", names: TestPKI.loopbackNames)
            let server = try TLSAppServer(cert: cert, key: key)
            let relay = try RelayProcess(config: RelayConfigText.proxy(Self.rules(server.port, "ca=\(pki.caFile)")))
            defer { relay.stop() }
            let authority = "localhost:\(server.port)"

            let first = try Self.get("https://\(authority)/", host: authority, through: relay)
            #expect(first.status == 200, "\(first.statusLine) \(first.bodyText)\n\(relay.stderr)")
            #expect(first.bodyText.contains("s_server"), "the s_server status page: \(first.bodyText)")
            #expect(first.bodyText.contains("New, TLSv1.3"), "a full handshake first: \(first.bodyText)")
            let row = Self.closeRow(relay, target: authority)
            #expect(row?["status"] == "200", "audit:\n\(relay.audit.dump())")
            #expect(row?["tls_version"] == "TLSv1.3")
            #expect(row?["tls_cipher"]?.hasPrefix("TLS_") == true, "an OpenSSL TLS 1.3 suite name: \(row?["tls_cipher"] ?? "nil")")
            #expect(row?["tls_sni"] == "localhost")

            let second = try Self.get("https://\(authority)/", host: authority, through: relay)
            #expect(second.status == 200, "\(second.statusLine) \(second.bodyText)")
            #expect(second.bodyText.contains("Reused, TLSv1.3"), "the second connection resumes: \(second.bodyText)")
        }

        @Test("https:// by address: the certificate is checked as an address, no SNI in the row")
        func httpsByAddress() throws {
            let pki = try TestPKI()
            let (cert, key) = try pki.issue("app", names: TestPKI.loopbackNames)
            let server = try TLSAppServer(cert: cert, key: key)
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(server.port) ca=\(pki.caFile)"]))
            defer { relay.stop() }
            let authority = "127.0.0.1:\(server.port)"
            let response = try Self.get("https://\(authority)/", host: authority, through: relay)
            #expect(response.status == 200, "\(response.statusLine) \(response.bodyText)\n\(relay.stderr)")
            #expect(response.bodyText.contains("s_server"))
            let row = Self.closeRow(relay, target: authority)
            #expect(row?["tls_version"] == "TLSv1.3", "audit:\n\(relay.audit.dump())")
            #expect(row?["tls_sni"] == nil, "no SNI is sent to an address")
        }

        @Test("http:// to a rule marked tls goes over TLS")
        func plainRequestToTLSRule() throws {
            let pki = try TestPKI()
            let (cert, key) = try pki.issue("app", names: TestPKI.loopbackNames)
            let server = try TLSAppServer(cert: cert, key: key)
            let relay = try RelayProcess(config: RelayConfigText.proxy(Self.rules(server.port, "tls ca=\(pki.caFile)")))
            defer { relay.stop() }
            let authority = "localhost:\(server.port)"
            let response = try Self.get("http://\(authority)/", host: authority, through: relay)
            #expect(response.status == 200, "\(response.statusLine) \(response.bodyText)\n\(relay.stderr)")
            #expect(response.bodyText.contains("s_server"), "only a TLS client gets the s_server page")
            #expect(Self.closeRow(relay, target: authority)?["tls_sni"] == "localhost", "audit:\n\(relay.audit.dump())")
        }

        /// A certificate the rule's trust refuses: 502 with the reason, the same in the row.
        static func expectRefused(cert: (cert: String, key: String), pki: TestPKI, reason: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) throws {
            let server = try TLSAppServer(cert: cert.cert, key: cert.key)
            let relay = try RelayProcess(config: RelayConfigText.proxy(Self.rules(server.port, "ca=\(pki.caFile)")))
            defer { relay.stop() }
            let authority = "localhost:\(server.port)"
            let response = try Self.get("https://\(authority)/", host: authority, through: relay)
            Expect.refusal(response, status: 502, reason: reason, sourceLocation: sourceLocation)
            let row = Self.closeRow(relay, target: authority)
            #expect(row?["reason"] == reason, "audit:\n\(relay.audit.dump())", sourceLocation: sourceLocation)
            #expect(row?["status"] == "502", sourceLocation: sourceLocation)
            #expect(row?["tls_version"] == nil, "no TLS was settled", sourceLocation: sourceLocation)
        }

        @Test("an expired certificate: 502 upstream-cert-expired")
        func expiredCertificate() throws {
            let pki = try TestPKI()
            let expired = try pki.issue("old", names: TestPKI.loopbackNames, notBefore: "20200101000000Z",
                                        notAfter: "20200201000000Z")
            try Self.expectRefused(cert: expired, pki: pki, reason: "upstream-cert-expired")
        }

        @Test("a self-signed certificate the rule's ca= does not vouch for: 502 upstream-cert-untrusted")
        func selfSignedCertificate() throws {
            let pki = try TestPKI()
            try Self.expectRefused(cert: try pki.selfSigned("rogue", names: TestPKI.loopbackNames), pki: pki,
                                   reason: "upstream-cert-untrusted")
        }

        @Test("a trusted certificate for another host: 502 upstream-cert-host-mismatch")
        func wrongHostCertificate() throws {
            let pki = try TestPKI()
            try Self.expectRefused(cert: try pki.issue("other", names: "DNS:other.example"), pki: pki,
                                   reason: "upstream-cert-host-mismatch")
        }

        @Test("verify=off passes a self-signed certificate, and check-config warns about it")
        func verifyOff() throws {
            let pki = try TestPKI()
            let (cert, key) = try pki.selfSigned("rogue", names: TestPKI.loopbackNames)
            let server = try TLSAppServer(cert: cert, key: key)
            let relay = try RelayProcess(config: RelayConfigText.proxy(Self.rules(server.port, "verify=off")))
            defer { relay.stop() }
            let authority = "localhost:\(server.port)"
            let response = try Self.get("https://\(authority)/", host: authority, through: relay)
            #expect(response.status == 200, "\(response.statusLine) \(response.bodyText)\n\(relay.stderr)")
            #expect(response.bodyText.contains("s_server"))
            let check = try RelayBinary.run(["check-config", "--config", relay.configPath])
            #expect(check.status == 0, "\(check.stderr)")
            #expect(check.stderr.contains("verify=off"), "check-config warns: \(check.stderr)")
        }

        @Test("a TLS 1.1-only server: upstream-tls-version under the default set, 200 with tls-versions=1.1,1.2")
        func legacyServer() throws {
            let pki = try TestPKI()
            let (cert, key) = try pki.issue("legacy", names: TestPKI.loopbackNames)
            let server = try TLSAppServer(cert: cert, key: key, options: ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"])
            let authority = "localhost:\(server.port)"
            do {
                let relay = try RelayProcess(config: RelayConfigText.proxy(Self.rules(server.port, "ca=\(pki.caFile)")))
                defer { relay.stop() }
                let response = try Self.get("https://\(authority)/", host: authority, through: relay)
                Expect.refusal(response, status: 502, reason: "upstream-tls-version")
            }
            let relay = try RelayProcess(config: RelayConfigText.proxy(
                Self.rules(server.port, "ca=\(pki.caFile) tls-versions=1.1,1.2")))
            defer { relay.stop() }
            let response = try Self.get("https://\(authority)/", host: authority, through: relay)
            #expect(response.status == 200, "\(response.statusLine) \(response.bodyText)\n\(relay.stderr)")
            #expect(response.bodyText.contains("TLSv1.1"), "\(response.bodyText)")
            #expect(Self.closeRow(relay, target: authority)?["tls_version"] == "TLSv1.1", "audit:\n\(relay.audit.dump())")
        }

        @Test("TLS 1.0 where both sides allow it: 200, the row says TLSv1.0 (OpenSSL's own name is TLSv1)")
        func tls10BothSidesAtLevelZero() throws {
            let pki = try TestPKI()
            let (cert, key) = try pki.issue("tls10", names: TestPKI.loopbackNames)
            let server = try TLSAppServer(cert: cert, key: key, options: ["-tls1", "-cipher", "DEFAULT@SECLEVEL=0"])
            let relay = try RelayProcess(config: RelayConfigText.proxy(Self.rules(server.port, "ca=\(pki.caFile) tls-versions=1.0")))
            defer { relay.stop() }
            let authority = "localhost:\(server.port)"
            let response = try Self.get("https://\(authority)/", host: authority, through: relay)
            #expect(response.status == 200, "\(response.statusLine) \(response.bodyText)\n\(relay.stderr)")
            #expect(Self.closeRow(relay, target: authority)?["tls_version"] == "TLSv1.0", "audit:\n\(relay.audit.dump())")
        }

        @Test("a server that accepts the connection and never answers the handshake: 504 upstream-timeout")
        func silentServerTimesOut() throws {
            // The kernel completes the connect; nobody reads: without the handshake's deadline the
            // test's socket timeout would end this instead of a 504.
            let silent = try TestListener()
            let relay = try RelayProcess(config: RelayConfigText.proxy(
                ["connect-timeout 1s", "server 127.0.0.1:\(silent.port) verify=off"]))
            defer { relay.stop() }
            let authority = "127.0.0.1:\(silent.port)"
            let response = try Self.get("https://\(authority)/", host: authority, through: relay)
            Expect.refusal(response, status: 504, reason: "upstream-timeout")
            #expect(Self.closeRow(relay, target: authority)?["reason"] == "upstream-timeout", "audit:\n\(relay.audit.dump())")
        }

        /// The relay's context for `tls-versions=1.0` runs at security level 0, but a server
        /// left at Debian's default level 2 cannot sign a TLS 1.0 handshake (no SHA-1
        /// signature algorithm is allowed there) and answers with OpenSSL's bare
        /// `internal_error` alert: the relay names that `tls-security-level`, not a generic failure.
        @Test("tls-versions=1.0 against s_server -tls1 at its default security level: tls-security-level")
        func securityLevelTrap() throws {
            let pki = try TestPKI()
            let (cert, key) = try pki.issue("tls10", names: TestPKI.loopbackNames)
            let server = try TLSAppServer(cert: cert, key: key, options: ["-tls1"])
            let relay = try RelayProcess(config: RelayConfigText.proxy(Self.rules(server.port, "ca=\(pki.caFile) tls-versions=1.0")))
            defer { relay.stop() }
            let authority = "localhost:\(server.port)"
            let response = try Self.get("https://\(authority)/", host: authority, through: relay)
            Expect.refusal(response, status: 502, reason: "tls-security-level")
            #expect(Self.closeRow(relay, target: authority)?["reason"] == "tls-security-level", "audit:\n\(relay.audit.dump())")
        }
    }
}
