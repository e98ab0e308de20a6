import Foundation
import Testing

extension IntegrationSuite {
    /// Hostile and broken handshakes inside CONNECT tunnels, written byte by byte on raw
    /// sockets, while an unrelated tunnel keeps echoing.
    @Suite("TLS bad input inside tunnels")
    struct TunnelTLSBadInputTests {
        /// A fatal alert record (version 0x0303) with `description`, as the relay sends it.
        static func alert(_ description: UInt8) -> [UInt8] { [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, description] }

        @Test("a ClientHello one byte per segment passes; a client that stops mid-hello times out; a bogus handshake record is refused; another tunnel echoes throughout")
        func hostileHandshakes() throws {
            let certificate = try TestCertificate()
            let tlsServer = try OpenSSLServer(certificate: certificate)
            let hello = try CapturedClientHello.capture()
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "tls-inspect-timeout 1s",
                "server 127.0.0.1:\(echo.port)",
                "server localhost:\(tlsServer.port)",
                "server 127.0.0.1:\(tlsServer.port)",
            ]))
            defer { relay.stop() }
            let healthy = try HealthyTunnel(relay: relay, echo: echo)
            let target = "localhost:\(tlsServer.port)"
            func closeRow(_ number: Int) -> AuditRow {
                let rows = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", [target], count: number)
                #expect(rows.count == number, "audit:\n\(relay.audit.dump())")
                return rows.count >= number ? rows[number - 1] : [:]
            }

            // One byte per segment (TCP_NODELAY, a pause after each): the server still gets
            // the whole hello and its ServerHello comes back.
            let trickle = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: target)
            for byte in hello {
                try trickle.write([byte])
                usleep(500)
            }
            let serverHello = try trickle.readExactly(6)
            #expect(serverHello[0] == 0x16 && serverHello[1] == 0x03 && serverHello[5] == 0x02,
                    "a handshake record holding a ServerHello: \(serverHello)")
            trickle.close()
            let passed = closeRow(1)
            #expect(passed["tls_sni"] == "localhost", "\(passed)")
            #expect(passed["tls_version"] == "TLSv1.3", "\(passed)")
            Expect.unaffected(relay, healthy)

            // Half a hello, then silence: the inspection timer ends it with handshake_failure.
            let stalled = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: target)
            try stalled.write(Array(hello[..<(hello.count / 2)]))
            Expect.unaffected(relay, healthy)
            stalled.setTimeout(seconds: 10)
            #expect(try stalled.readExactly(7) == Self.alert(40), "handshake_failure after the inspection timeout")
            #expect(ProxyClient.closes(stalled))
            let timedOut = closeRow(2)
            #expect(timedOut["reason"]?.hasPrefix("tls-inspection-timeout") == true, "\(timedOut)")
            #expect(timedOut["bytes_up"] == "0", "the unjudged half hello never reached the server: \(timedOut)")
            Expect.unaffected(relay, healthy)

            // A handshake record whose ClientHello is two bytes long.
            let bogus = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: target)
            try bogus.write([0x16, 0x03, 0x01, 0x00, 0x06, 0x01, 0x00, 0x00, 0x02, 0x03, 0x03])
            #expect(try bogus.readExactly(7) == Self.alert(50), "decode_error")
            #expect(ProxyClient.closes(bogus))
            let malformed = closeRow(3)
            #expect(malformed["reason"]?.hasPrefix("bad-tls-handshake") == true, "\(malformed)")
            #expect(malformed["bytes_up"] == "0", "\(malformed)")
            Expect.unaffected(relay, healthy)

            healthy.socket.shutdownWrite()
            #expect(ProxyClient.closes(healthy.socket))
            let healthyClose = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", ["127.0.0.1:\(echo.port)"])
            #expect(healthyClose.first?["reason"] == "completed", "audit:\n\(relay.audit.dump())")
        }
    }
}
