import Foundation
import Glibc
import Testing

extension IntegrationSuite {
    /// `listen … tls`: an HTTPS proxy, driven by real TLS clients (curl, `openssl s_client`)
    /// against the real binary, with certificates made for each test.
    @Suite("HTTPS listener")
    struct HTTPSListenerTests {
        static func config(_ certs: TestCertificates, server: (cert: String, key: String), extra: String = "",
                           listenerOptions: String = "", upstreamPorts: [UInt16]) -> String {
            "listen 127.0.0.1:0\n"
                + "listen 127.0.0.1:0 tls cert=\(server.cert) key=\(server.key) \(listenerOptions)\n"
                + "state-dir {STATE}\nrefusal-summary-interval 1s\n"
                + upstreamPorts.map { "server 127.0.0.1:\($0)\n" }.joined() + extra
        }

        static func curl(_ arguments: [String]) throws -> ProcessResult {
            try Subprocess.run("/usr/bin/curl", ["-sS", "--max-time", "15"] + arguments, timeout: 30)
        }

        /// `openssl s_client` to the listener; `input` is written to its stdin.
        static func sClient(_ port: UInt16, _ arguments: [String], input: String? = nil) throws -> ProcessResult {
            try Subprocess.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)"] + arguments,
                               input: input.map { .bytes(Array($0.utf8)) } ?? .none, timeout: 20)
        }

        /// The base64 body of a PEM file, to find it in `s_client`'s output.
        static func pemBody(_ path: String) throws -> String {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            return text.components(separatedBy: "\n").filter { !$0.hasPrefix("-----") && !$0.isEmpty }.joined(separator: "\n")
        }

        @Test("curl through the HTTPS proxy: an absolute-form request and a CONNECT tunnel; rows carry the client TLS version")
        func curlAbsoluteFormAndTunnel() throws {
            let certs = try TestCertificates()
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: Self.config(certs, server: try certs.issueServer(), upstreamPorts: [origin.port]))
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first, "\(relay.listeners)")
            let proxy = ["--proxy", "https://127.0.0.1:\(port)", "--proxy-cacert", certs.caCert]

            let plain = try Self.curl(proxy + ["http://127.0.0.1:\(origin.port)/"])
            #expect(plain.status == 0, "\(plain.stderr)\n\(relay.stderr)")
            #expect(plain.stdoutText.contains("hello from origin"))
            let tunnelled = try Self.curl(proxy + ["-p", "http://127.0.0.1:\(origin.port)/"])
            #expect(tunnelled.status == 0, "\(tunnelled.stderr)\n\(relay.stderr)")
            #expect(tunnelled.stdoutText.contains("hello from origin"))

            let requests = relay.audit.waitForEvents(where: "event = 'request-close' AND client_tls_version = 'TLSv1.3'")
            #expect(requests.count == 1, "\(relay.audit.dump())")
            let tunnels = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND client_tls_version = 'TLSv1.3'")
            #expect(tunnels.count == 1, "\(relay.audit.dump())")
            #expect(tunnels.first?["client_tls_cipher"]?.hasPrefix("TLS_") == true)
            #expect(Int(tunnels.first?["bytes_down"] ?? "0") ?? 0 > 0, "the answer's bytes are counted")
            let opens = try relay.audit.events(where: "event = 'tunnel-open' AND client_tls_version = 'TLSv1.3'")
            #expect(opens.count == 1, "every row of the connection carries the version")
        }

        @Test("s_client typing CONNECT by hand, with the request pipelined behind it")
        func sClientConnectByHand() throws {
            let certs = try TestCertificates()
            let origin = try CannedHTTPOrigin(reply: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", closeAfter: true)
            let relay = try RelayProcess(config: Self.config(certs, server: try certs.issueServer(), upstreamPorts: [origin.port]))
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first)
            let target = "127.0.0.1:\(origin.port)"
            let result = try Self.sClient(port, ["-CAfile", certs.caCert, "-quiet"],
                                          input: "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
            let output = result.stdoutText
            #expect(output.hasPrefix("HTTP/1.1 200"), "\(output)\n\(result.stderr)\n\(relay.stderr)")
            #expect(output.hasSuffix("hello"), "\(output)")
            #expect(origin.heads.count == 1, "the pipelined request reached the origin")
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close'")
            #expect(close.first?["bytes_down"] == "43", "the origin's reply, not the 200: \(relay.audit.dump())")
        }

        @Test("plaintext HTTP to the TLS port is closed and counted as not-tls")
        func plaintextIsNotTLS() throws {
            let certs = try TestCertificates()
            let relay = try RelayProcess(config: Self.config(certs, server: try certs.issueServer(), upstreamPorts: []))
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first)
            let socket = try TestSocket.connect(port: port)
            defer { socket.close() }
            try socket.write("GET http://127.0.0.1/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let answer = (try? socket.readToEOF(limit: 4096)) ?? []
            #expect(!String(decoding: answer, as: UTF8.self).contains("HTTP/1.1"), "no HTTP answer inside a TLS port")
            let rows = relay.audit.waitForEvents(where: "event = 'refused' AND reason LIKE 'not-tls%'")
            #expect(rows.count == 1, "\(relay.audit.dump())\n\(relay.stderr)")
            #expect(rows.first?["client"] == "127.0.0.1")
        }

        @Test("a client that stops mid-handshake is closed at the header timeout, counted, and another client is served meanwhile")
        func stalledHandshakeTimesOut() throws {
            let certs = try TestCertificates()
            let origin = try CannedHTTPOrigin(reply: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", closeAfter: true)
            let relay = try RelayProcess(config: Self.config(certs, server: try certs.issueServer(), extra: "header-timeout 1s\n",
                                                             upstreamPorts: [origin.port]))
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first)
            let stalled = try TestSocket.connect(port: port)
            defer { stalled.close() }
            // A handshake record's header and two bytes of its ClientHello, then nothing.
            try stalled.write([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00])
            let target = "127.0.0.1:\(origin.port)"
            let served = try Self.sClient(port, ["-CAfile", certs.caCert, "-quiet"],
                                          input: "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(served.stdoutText.hasSuffix("hello"), "the other client is served meanwhile: \(served.stdoutText)")
            let started = Date()
            let answer = (try? stalled.readToEOF(limit: 4096)) ?? []
            #expect(Date().timeIntervalSince(started) < 5, "closed at the header timeout, not the idle one")
            #expect(!answer.contains(0x17), "no application data to a client that never finished its handshake")
            let rows = relay.audit.waitForEvents(where: "event = 'refused' AND reason LIKE 'header-timeout%'")
            #expect(rows.count == 1, "\(relay.audit.dump())\n\(relay.stderr)")
        }

        @Test("a TLS 1.1-only client against the default versions is refused tls-version-refused")
        func tls11IsRefused() throws {
            let certs = try TestCertificates()
            let relay = try RelayProcess(config: Self.config(certs, server: try certs.issueServer(), upstreamPorts: []))
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first)
            let result = try Self.sClient(port, ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"])
            #expect(result.stdoutText.contains("Cipher is (NONE)"), "no session: \(result.stdoutText)")
            let rows = relay.audit.waitForEvents(where: "event = 'refused' AND reason LIKE 'tls-version-refused%'")
            #expect(rows.count == 1, "\(relay.audit.dump())\n\(relay.stderr)")
        }

        @Test("auth client-cert: SAN email, else CN, is the principal; no certificate is a 403 client-cert-required")
        func clientCertificateAuth() throws {
            let certs = try TestCertificates()
            let origin = try HTTPOrigin()
            let email = try certs.issue("alice", subject: "/CN=Alice", san: "email:alice@example.test")
            let cnOnly = try certs.issue("bob", subject: "/CN=bob")
            let relay = try RelayProcess(config: Self.config(certs, server: try certs.issueServer(), extra: "auth client-cert\n",
                                                             listenerOptions: "client-ca=\(certs.caCert)",
                                                             upstreamPorts: [origin.port]))
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first)
            let proxy = ["--proxy", "https://127.0.0.1:\(port)", "--proxy-cacert", certs.caCert,
                         "-o", "/dev/null", "-w", "%{http_code}"]
            let url = "http://127.0.0.1:\(origin.port)/"
            let asAlice = try Self.curl(proxy + ["--proxy-cert", email.cert, "--proxy-key", email.key, url])
            #expect(asAlice.stdoutText == "200", "\(asAlice.stderr)\n\(relay.stderr)")
            let asBob = try Self.curl(proxy + ["--proxy-cert", cnOnly.cert, "--proxy-key", cnOnly.key, url])
            #expect(asBob.stdoutText == "200", "\(asBob.stderr)")
            let anonymous = try Self.curl(proxy + [url])
            #expect(anonymous.stdoutText == "403", "\(anonymous.stderr)")

            let granted = relay.audit.waitForEvents(where: "event = 'request-close' AND scheme = 'client-cert'", count: 2)
            #expect(granted.compactMap { $0["principal"] }.sorted() == ["alice@example.test", "bob"], "\(relay.audit.dump())")
            let refused = relay.audit.waitForEvents(where: "event = 'refused' AND reason LIKE 'client-cert-required%'")
            #expect(refused.first?["status"] == "403", "\(relay.audit.dump())")
        }

        @Test("require-client-cert: a client without one is refused client-cert-required")
        func requireClientCertificate() throws {
            let certs = try TestCertificates()
            let relay = try RelayProcess(config: Self.config(certs, server: try certs.issueServer(),
                                                             listenerOptions: "client-ca=\(certs.caCert) require-client-cert",
                                                             upstreamPorts: []))
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first)
            _ = try Self.sClient(port, ["-CAfile", certs.caCert], input: "CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n")
            let rows = relay.audit.waitForEvents(where: "event = 'refused' AND reason LIKE 'client-cert-required%'")
            #expect(rows.count == 1, "\(relay.audit.dump())\n\(relay.stderr)")
        }

        @Test("SIGHUP: a replaced certificate serves new connections, a broken one is refused and the old one keeps serving, sessions resume across it")
        func reloadReplacesTheCertificate() throws {
            let certs = try TestCertificates()
            let first = try certs.issueServer("first")
            let live = (cert: certs.directory.path + "/live.pem", key: certs.directory.path + "/live.key")
            try FileManager.default.copyItem(atPath: first.cert, toPath: live.cert)
            try FileManager.default.copyItem(atPath: first.key, toPath: live.key)
            let origin = try EchoServer()
            let relay = try RelayProcess(config: Self.config(certs, server: live, upstreamPorts: [origin.port]))
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first)
            let sessionFile = certs.directory.path + "/session.pem"
            let before = try Self.sClient(port, ["-CAfile", certs.caCert, "-tls1_2", "-sess_out", sessionFile], input: "")
            #expect(before.stdoutText.contains(try Self.pemBody(first.cert)), "\(before.stdoutText)\n\(relay.stderr)")

            // An open tunnel, which the reload must leave up.
            let tunnel = try TestSocket.connect(port: relay.proxyPort)
            defer { tunnel.close() }
            try tunnel.write("CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n")
            #expect(String(decoding: try tunnel.read(), as: UTF8.self).hasPrefix("HTTP/1.1 200"))

            let second = try certs.issueServer("second")
            try FileManager.default.removeItem(atPath: live.cert)
            try FileManager.default.removeItem(atPath: live.key)
            try FileManager.default.copyItem(atPath: second.cert, toPath: live.cert)
            try FileManager.default.copyItem(atPath: second.key, toPath: live.key)
            kill(relay.pid, SIGHUP)
            #expect(ReloadTests.waitForLog(relay, "dynrelay: reloaded", count: 1), "\(relay.stderr)")
            let after = try Self.sClient(port, ["-CAfile", certs.caCert, "-tls1_2"], input: "")
            #expect(after.stdoutText.contains(try Self.pemBody(second.cert)), "\(after.stdoutText)")
            try tunnel.write("still")
            #expect((try? tunnel.readExactly(5)) == Array("still".utf8), "the open tunnel stays up: \(relay.audit.dump())")

            let resumed = try Self.sClient(port, ["-CAfile", certs.caCert, "-tls1_2", "-sess_in", sessionFile], input: "")
            #expect(resumed.stdoutText.contains("Reused, TLSv1.2"), "ticket keys carried over: \(resumed.stdoutText)")

            try "not a certificate\n".write(toFile: live.cert, atomically: true, encoding: .utf8)
            kill(relay.pid, SIGHUP)
            #expect(ReloadTests.waitForLog(relay, "reload refused", count: 1), "\(relay.stderr)")
            let kept = try Self.sClient(port, ["-CAfile", certs.caCert], input: "")
            #expect(kept.stdoutText.contains(try Self.pemBody(second.cert)), "the old certificate keeps serving")
            let reconnect = try Self.sClient(port, ["-CAfile", certs.caCert, "-tls1_2", "-reconnect"], input: "")
            #expect(reconnect.stdoutText.contains("Reused, TLSv1.2"), "\(reconnect.stdoutText)")
        }

        @Test("check-config warns of a listener certificate expiring within 14 days")
        func checkConfigWarnsOfExpiry() throws {
            let certs = try TestCertificates()
            let soon = try certs.issueServer("soon", days: 3)
            let directory = try TempDirectory()
            let path = try directory.write("dynrelay.conf", Self.config(certs, server: soon, upstreamPorts: [])
                .replacingOccurrences(of: "{STATE}", with: directory.path + "/state"))
            let result = try RelayBinary.run(["check-config", "--config", path])
            let output = result.stdoutText + result.stderr
            #expect(result.status == 0, "\(output)")
            #expect(output.contains("certificate \(soon.cert) expires in"), "\(output)")
        }
    }
}
