import Foundation
import Testing

extension IntegrationSuite {
    /// A tunnel under a TLS policy is judged on its first bytes: a plain client's is spliced
    /// at once when they settle the policy, and inspected when they do not, with the same
    /// audit row and the same refusals either way.
    @Suite("Tunnel first bytes")
    struct TunnelFirstBytesTests {
        @Test("under one rule, plain tunnels (bytes after the 200 or behind the CONNECT) are relayed byte exact without TLS columns, a TLS tunnel gets them")
        func plainAndTLSUnderOneRule() throws {
            let certificate = try TestCertificate()
            let tlsServer = try OpenSSLServer(certificate: certificate)
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server localhost:*", "server 127.0.0.1:*"]))
            defer { relay.stop() }
            func closeRow(_ target: String) throws -> AuditRow {
                let rows = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", [target])
                return try #require(rows.first, "\(target): audit:\n\(relay.audit.dump())")
            }

            let plain = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "localhost:\(echo.port)")
            let ping = Array("ping\r\n".utf8)
            try plain.write(ping)
            #expect(try plain.readExactly(ping.count) == ping)
            plain.shutdownWrite()
            #expect(ProxyClient.closes(plain))
            let plainRow = try closeRow("localhost:\(echo.port)")
            #expect(plainRow["reason"] == "completed", "\(plainRow)")
            #expect(plainRow["bytes_up"] == String(ping.count) && plainRow["bytes_down"] == String(ping.count),
                    "payload only, the 200 is the relay's: \(plainRow)")
            #expect(plainRow["tls_version"] == nil && plainRow["tls_cipher"] == nil && plainRow["tls_sni"] == nil, "\(plainRow)")

            // Bytes in the same segment as the CONNECT are judged before the tunnel starts.
            let pipelined = try TestSocket.connect(port: relay.proxyPort)
            let hello = Array("hello".utf8)
            let authority = "localhost:\(echo.port)"
            try pipelined.write(Array("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n".utf8) + hello)
            #expect(try ProxyClient.readResponse(pipelined, bodyless: true).status == 200)
            #expect(try pipelined.readExactly(hello.count) == hello)
            pipelined.shutdownWrite()
            #expect(ProxyClient.closes(pipelined))
            let rows = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", [authority], count: 2)
            let pipelinedRow = try #require(rows.count == 2 ? rows[1] : nil, "audit:\n\(relay.audit.dump())")
            #expect(pipelinedRow["reason"] == "completed", "\(pipelinedRow)")
            #expect(pipelinedRow["bytes_up"] == String(hello.count) && pipelinedRow["bytes_down"] == String(hello.count),
                    "\(pipelinedRow)")
            #expect(pipelinedRow["tls_version"] == nil, "\(pipelinedRow)")

            let tls = try OpenSSLClientRun.run(proxyPort: relay.proxyPort, connect: "localhost:\(tlsServer.port)",
                                               servername: "localhost")
            #expect(tls.exchangedBytes, "\(tls.summary)")
            let tlsRow = try closeRow("localhost:\(tlsServer.port)")
            #expect(tlsRow["reason"] == "completed", "\(tlsRow)")
            #expect(tlsRow["tls_version"] == "TLSv1.3" && tlsRow["tls_sni"] == "localhost", "\(tlsRow)")
            #expect(tlsRow["tls_cipher"]?.hasPrefix("TLS_") == true, "\(tlsRow)")
            #expect(tlsRow["rule"] == plainRow["rule"] && plainRow["rule"]?.isEmpty == false, "one rule: \(tlsRow) \(plainRow)")
        }

        @Test("sni=match refuses a mismatched SNI whose ClientHello comes one byte at a time after a pause")
        func trickledMismatchAfterAPause() throws {
            let certificate = try TestCertificate()
            let tlsServer = try OpenSSLServer(certificate: certificate)
            let hello = try CapturedClientHello.capture(servername: "vm")
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "server localhost:\(tlsServer.port)", "server 127.0.0.1:\(tlsServer.port)",
            ]))
            defer { relay.stop() }
            let target = "localhost:\(tlsServer.port)"

            let trickle = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: target)
            // The tunnel is spliced and waiting when the first byte comes, alone.
            usleep(300_000)
            for byte in hello {
                try trickle.write([byte])
                usleep(500)
            }
            trickle.setTimeout(seconds: 10)
            #expect(try trickle.readExactly(7) == TunnelTLSBadInputTests.alert(112), "unrecognized_name")
            #expect(ProxyClient.closes(trickle))
            let rows = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", [target])
            let row = try #require(rows.first, "audit:\n\(relay.audit.dump())")
            #expect(row["reason"]?.hasPrefix("sni-mismatch") == true, "\(row)")
            #expect(row["tls_sni"] == "vm", "\(row)")
            #expect(row["bytes_up"] == "0" && row["bytes_down"] == "0", "nothing of the hello reached the server: \(row)")
        }
    }
}
