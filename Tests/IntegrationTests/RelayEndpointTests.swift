import Foundation
import Glibc
import RelayCore
import Testing

extension IntegrationSuite {
    /// The relay's own status and config endpoints, against the real binary with curl and
    /// raw sockets: the JSON bytes, the audit rows, keep-alive, bad input and the drain.
    @Suite("relay endpoints")
    struct RelayEndpointTests {
        static let statusPath = "/.well-known/dynrelay/status"
        static let configPath = "/.well-known/dynrelay/config"
        static let statusBody = #"{"status":"ok","version":""# + RelayVersion.current + #"","instance":"relay-it"}"# + "\n"

        static func statusRequest(_ extra: String = "") -> String {
            "GET \(statusPath) HTTP/1.1\r\nHost: relay\r\n\(extra)\r\n"
        }

        /// The server rule's JSON as the config endpoint lists it.
        static func server(_ port: UInt16, line: Int) -> String {
            #"{"host":"127.0.0.1","ports":"\#(port)","rule":"{CONF}:\#(line)","tls-versions":["1.2","1.3"],"#
                + #""sni":"match","tunnel-tls":"any","tls":false,"verify":true}"#
        }

        @Test("status with curl: the JSON bytes, a row naming the listener and the client; then a CONNECT on the same connection")
        func statusThenConnect() throws {
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["instance relay-it", "server 127.0.0.1:\(origin.port)"]))
            defer { relay.stop() }
            let result = try Curl.run(["-D", "-", "http://127.0.0.1:\(relay.proxyPort)\(Self.statusPath)"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdoutText.hasPrefix("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"), "\(result.stdoutText)")
            #expect(result.stdoutText.hasSuffix("\r\n\r\n" + Self.statusBody), "\(result.stdoutText)")
            let head = try Curl.run(["-I", "http://127.0.0.1:\(relay.proxyPort)\(Self.statusPath)"])
            #expect(head.stdoutText.contains("Content-Length: \(Self.statusBody.utf8.count)\r\n"), "\(head.stdoutText)")

            let socket = try TestSocket.connect(port: relay.proxyPort)
            try socket.write(Self.statusRequest())
            let status = try ProxyClient.readResponse(socket)
            #expect(status.status == 200 && status.bodyText == Self.statusBody)
            try socket.write("CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n")
            let established = try ProxyClient.readResponse(socket, bodyless: true)
            #expect(established.status == 200, "\(established.statusLine)")
            try socket.write("GET / HTTP/1.1\r\nHost: origin\r\nConnection: close\r\n\r\n")
            #expect(try ProxyClient.readResponse(socket).bodyText == "hello from origin\n")

            let rows = relay.audit.waitForEvents(where: "reason = 'relay-status'", count: 3)
            #expect(rows.count == 3, "curl GET, curl HEAD, the raw GET: \(relay.audit.dump())")
            for row in rows {
                #expect(row["event"] == "request-close" && row["decision"] == "allow" && row["status"] == "200")
                #expect(row["listener"] == "127.0.0.1:\(relay.proxyPort)" && row["client"]?.hasPrefix("127.0.0.1:") == true)
                #expect(row["target"] == Self.statusPath && row["principal"] == nil)
            }
            #expect(rows.first?["bytes_down"] == String(result.stdout.count), "the answer's bytes, head and body")
            #expect(relay.audit.waitForEvents(where: "event = 'tunnel-open'").count == 1, "the CONNECT after the status went on")
        }

        @Test("config with curl --proxy-user, Basic and Digest: 407 first, then the principal's servers")
        func configBehindProxyAuth() throws {
            let origin = try HTTPOrigin()
            let relay = try AuthFixtures.relay(["auth digest realm=it", "auth basic realm=it"],
                                               servers: ["server 127.0.0.1:\(origin.port)", "deny 127.0.0.2"])
            defer { relay.stop() }
            let (unauthenticated, socket) = try ProxyClient.exchange(relayPort: relay.proxyPort,
                                                                    "GET \(Self.configPath) HTTP/1.1\r\nHost: relay\r\n\r\n")
            _ = socket
            #expect(unauthenticated.status == 407)
            let challenges = unauthenticated.headers.filter { $0.name.lowercased() == "proxy-authenticate" }.map(\.value)
            #expect(challenges.contains { $0.hasPrefix("Digest ") } && challenges.last?.hasPrefix("Basic ") == true,
                    "every configured scheme, strongest first: \(challenges)")

            let expected = #"{"principal":"alice","scheme":"SCHEME","servers":["#
                + Self.server(origin.port, line: 7).replacingOccurrences(of: "{CONF}", with: relay.configPath) + "]}\n"
            for (flag, scheme) in [("--proxy-basic", "Basic"), ("--proxy-digest", "Digest")] {
                let result = try Curl.run(["-x", "http://127.0.0.1:\(relay.proxyPort)", flag,
                                           "--proxy-user", "\(AuthFixtures.user):\(AuthFixtures.password)",
                                           // curl signs Digest's `uri` with the URL's path, not the request
                                           // target: the two must be the same.
                                           "--request-target", Self.configPath,
                                           "http://127.0.0.1:\(relay.proxyPort)\(Self.configPath)"])
                #expect(result.status == 0, "\(flag): \(result.stderr)")
                #expect(result.stdoutText == expected.replacingOccurrences(of: "SCHEME", with: scheme),
                        "\(flag): \(result.stdoutText)\n\(relay.stderr.suffix(2000))")
                let rows = relay.audit.waitForEvents(where: "reason = 'relay-config' AND scheme = ?", [scheme])
                #expect(rows.last?["principal"] == AuthFixtures.user && rows.last?["status"] == "200", "\(relay.audit.dump())")
                #expect(rows.last?["target"] == Self.configPath)
            }
            #expect(Expect.refusedRow(relay, reason: "auth-required", status: 407, target: Self.configPath) != nil)
            #expect(origin.requests.isEmpty)
        }

        @Test("status over the HTTPS listener with --cacert; the row carries the client's TLS")
        func statusOverHTTPS() throws {
            let certs = try TestCertificates()
            let server = try certs.issueServer()
            let relay = try RelayProcess(config: "listen 127.0.0.1:0\nlisten 127.0.0.1:0 tls cert=\(server.cert) key=\(server.key)\n"
                                         + "state-dir {STATE}\ninstance relay-it\nserver 127.0.0.1:9\n")
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first)
            let result = try Curl.run(["--cacert", certs.caCert, "https://127.0.0.1:\(port)\(Self.statusPath)"])
            #expect(result.status == 0, "\(result.stderr)\n\(relay.stderr)")
            #expect(result.stdoutText == Self.statusBody)
            let row = relay.audit.waitForEvents(where: "reason = 'relay-status' AND client_tls_version = 'TLSv1.3'").last
            #expect(row?["listener"] == "127.0.0.1:\(port)", "\(relay.audit.dump())")
        }

        @Test("bad input: 405 with Allow, no path games, HTTP/1.0, a body, a long query, a burst of 100 pipelined")
        func badInput() throws {
            let relay = try RelayProcess(config: RelayConfigText.proxy(["instance relay-it", "server 127.0.0.1:9"]))
            defer { relay.stop() }
            let (post, _) = try ProxyClient.exchange(relayPort: relay.proxyPort,
                                                     "POST \(Self.statusPath) HTTP/1.1\r\nHost: relay\r\nContent-Length: 2\r\n\r\n{}")
            Expect.refusal(post, status: 405, reason: "method-not-allowed")
            #expect(post.header("allow") == "GET, HEAD")
            Expect.refusedRow(relay, reason: "method-not-allowed", status: 405, target: Self.statusPath)

            let (games, _) = try ProxyClient.exchange(relayPort: relay.proxyPort,
                                                      "GET \(Self.statusPath)/../config HTTP/1.1\r\nHost: relay\r\n\r\n")
            Expect.refusal(games, status: 400, reason: "not-a-proxy-request")

            let (old, _) = try ProxyClient.exchange(relayPort: relay.proxyPort, "GET \(Self.statusPath) HTTP/1.0\r\n\r\n")
            #expect(old.status == 200 && old.bodyText == Self.statusBody && old.header("connection") == "close")

            let (withBody, bodySocket) = try ProxyClient.exchange(relayPort: relay.proxyPort,
                                                                  Self.statusRequest("Content-Length: 3\r\n") + "abc")
            #expect(withBody.status == 200 && withBody.header("connection") == "close")
            #expect(ProxyClient.closes(bodySocket))

            let query = "?" + String(repeating: "x=%2e%2e/&", count: 2000)
            let (queried, _) = try ProxyClient.exchange(relayPort: relay.proxyPort,
                                                        "GET \(Self.statusPath)\(query) HTTP/1.1\r\nHost: relay\r\n\r\n")
            #expect(queried.status == 200 && queried.bodyText == Self.statusBody)

            let socket = try TestSocket.connect(port: relay.proxyPort)
            try socket.write(String(repeating: Self.statusRequest(), count: 100))
            for index in 0..<100 {
                let response = try ProxyClient.readResponse(socket)
                #expect(response.status == 200 && response.bodyText == Self.statusBody, "response \(index)")
            }
            try socket.write(Self.statusRequest("Connection: close\r\n"))
            #expect(try ProxyClient.readResponse(socket).status == 200)
            #expect(ProxyClient.closes(socket))
            let rows = relay.audit.waitForEvents(where: "reason = 'relay-status'", count: 104)
            #expect(rows.count == 104, "HTTP/1.0, the body, the query, 100 and the last")
        }

        @Test("while the relay drains, a kept-alive client's status is 503 draining and the connection closes")
        func drainingIs503() throws {
            let relay = try RelayProcess(config: RelayConfigText.proxy(["instance relay-it", "server 127.0.0.1:9"]))
            let socket = try TestSocket.connect(port: relay.proxyPort)
            try socket.write(Self.statusRequest())
            #expect(try ProxyClient.readResponse(socket).status == 200)
            kill(relay.pid, SIGTERM)
            let deadline = Date().addingTimeInterval(1.5)
            while !relay.stderr.contains("draining") && Date() < deadline { usleep(10_000) }
            try socket.write(Self.statusRequest())
            let draining = try ProxyClient.readResponse(socket)
            #expect(draining.status == 503, "\(draining.statusLine)")
            #expect(draining.bodyText == Self.statusBody.replacingOccurrences(of: #""ok""#, with: #""draining""#))
            #expect(draining.header("connection") == "close" && ProxyClient.closes(socket))
            relay.stop()
            let rows = try relay.audit.events(where: "reason = 'relay-status' AND status = '503'")
            #expect(rows.count == 1, "\(relay.audit.dump())")
        }
    }
}
