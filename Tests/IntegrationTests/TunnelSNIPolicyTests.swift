import Foundation
import Testing

extension IntegrationSuite {
    /// `sni=match|optional|any` on a server rule, judged on the ClientHello of the end-to-end
    /// TLS inside a CONNECT tunnel, with `openssl s_client` and `s_server` as the peers.
    @Suite("SNI policy inside tunnels")
    struct TunnelSNIPolicyTests {
        /// One client run through the relay and what must come of it.
        struct Case: Sendable, CustomStringConvertible {
            var connect: String
            var servername: String?
            /// nil: kept; else the `reason` of its close row.
            var refusedWith: String?
            var description: String { "CONNECT \(connect) SNI \(servername ?? "(none)")" }
        }

        @Test("match (case and trailing dot ignored), mismatch, missing; optional and any let a hello without SNI pass")
        func sniPolicies() throws {
            let certificate = try TestCertificate()
            let matching = try OpenSSLServer(certificate: certificate)
            let optional = try OpenSSLServer(certificate: certificate)
            let any = try OpenSSLServer(certificate: certificate)
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "server localhost:\(matching.port)",
                "server 127.0.0.1:\(matching.port)",
                "server 127.0.0.0/8:\(optional.port) sni=optional",
                "server 127.0.0.1:\(any.port) sni=any",
            ]))
            defer { relay.stop() }
            let cases = [
                Case(connect: "localhost:\(matching.port)", servername: "localhost"),
                Case(connect: "localhost:\(matching.port)", servername: "LOCALHOST"),
                Case(connect: "localhost:\(matching.port)", servername: "localhost."),
                Case(connect: "localhost:\(matching.port)", servername: "vm", refusedWith: "sni-mismatch"),
                Case(connect: "localhost:\(matching.port)", servername: nil, refusedWith: "sni-missing"),
                // An address CONNECT without a name would otherwise get around name rules.
                Case(connect: "127.0.0.1:\(matching.port)", servername: nil, refusedWith: "sni-missing"),
                Case(connect: "127.0.0.1:\(optional.port)", servername: nil),
                Case(connect: "127.0.0.1:\(optional.port)", servername: "vm", refusedWith: "sni-mismatch"),
                Case(connect: "127.0.0.1:\(any.port)", servername: nil),
                Case(connect: "127.0.0.1:\(any.port)", servername: "vm"),
            ]
            for (index, item) in cases.enumerated() {
                let run = try OpenSSLClientRun.run(proxyPort: relay.proxyPort, connect: item.connect, servername: item.servername)
                // Cases run one after another, so the newest close row is this case's.
                let closes = relay.audit.waitForEvents(where: "event = 'tunnel-close'", count: index + 1)
                try #require(closes.count == index + 1, "\(item): audit:\n\(relay.audit.dump())")
                let row = closes[index]
                #expect(row["target"] == item.connect, "\(item)")
                if let reason = item.refusedWith {
                    #expect(!run.exchangedBytes, "\(item): must be refused; \(run.summary)")
                    #expect(row["reason"]?.hasPrefix(reason) == true, "\(item): \(row)")
                    #expect(row["bytes_down"] == "0", "\(item): nothing of the server reached the client: \(row)")
                } else {
                    #expect(run.exchangedBytes, "\(item): must be kept; \(run.summary)")
                    #expect(row["reason"] == "completed", "\(item): \(row)")
                    #expect(row["tls_version"] == "TLSv1.3", "\(item): \(row)")
                    #expect(row["tls_cipher"]?.hasPrefix("TLS_") == true, "\(item): \(row)")
                    // The name is audited as it is compared: lower case, no trailing dot.
                    let audited = item.servername.map { $0.lowercased().hasSuffix(".") ? String($0.lowercased().dropLast()) : $0.lowercased() }
                    #expect(row["tls_sni"] == audited, "\(item): \(row)")
                }
            }
        }

        @Test("tunnel-tls=required refuses a cleartext client and keeps TLS; under any, a server that speaks first is relayed at once, audited without TLS")
        func cleartextPolicy() throws {
            let certificate = try TestCertificate()
            let tlsServer = try OpenSSLServer(certificate: certificate)
            let echo = try EchoServer()
            let banner = try BannerServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "server 127.0.0.1:\(echo.port) tunnel-tls=required",
                "server localhost:\(tlsServer.port)",
                "server 127.0.0.1:\(tlsServer.port) tunnel-tls=required",
                "server 127.0.0.1:\(banner.port)",
            ]))
            defer { relay.stop() }

            let cleartext = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "127.0.0.1:\(echo.port)")
            try cleartext.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(ProxyClient.closes(cleartext), "a cleartext client gets nothing back, not even an alert")
            let refused = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", ["127.0.0.1:\(echo.port)"])
            #expect(refused.first?["reason"]?.hasPrefix("tls-required") == true, "audit:\n\(relay.audit.dump())")
            #expect(refused.first?["bytes_up"] == "0", "the cleartext never reached the server")
            #expect(echo.connections <= 1)

            let tls = try OpenSSLClientRun.run(proxyPort: relay.proxyPort, connect: "localhost:\(tlsServer.port)",
                                               servername: "localhost")
            #expect(tls.exchangedBytes, "\(tls.summary)")

            // The client sends nothing until the banner is in: a relay waiting for the client's
            // first bytes would leave both waiting until the socket timeout.
            let quiet = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "127.0.0.1:\(banner.port)")
            quiet.setTimeout(seconds: 5)
            #expect(try quiet.readExactly(BannerServer.banner.count) == BannerServer.banner)
            try quiet.write("EHLO relay\r\n")
            #expect(try quiet.readExactly(12) == Array("EHLO relay\r\n".utf8))
            quiet.shutdownWrite()
            #expect(ProxyClient.closes(quiet))
            let kept = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", ["127.0.0.1:\(banner.port)"])
            let row = try #require(kept.first, "audit:\n\(relay.audit.dump())")
            #expect(row["reason"] == "completed")
            #expect(row["bytes_down"] == String(BannerServer.banner.count + 12))
            #expect(row["tls_version"] == nil && row["tls_cipher"] == nil && row["tls_sni"] == nil,
                    "a cleartext tunnel has no TLS columns: \(row)")
        }
    }
}
