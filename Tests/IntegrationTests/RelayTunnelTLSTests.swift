import Foundation
import Glibc
import RelayClient
import RelayCore
import Testing

extension IntegrationSuite {
    /// End-to-end TLS inside a `RelayTunnel` to `openssl s_server`, through dynrelay's plain
    /// and HTTPS listeners: verification on, the CA file, version toggles.
    @Suite("RelayTunnel TLS to the app server")
    struct RelayTunnelTLSTests {
        typealias Base = RelayTunnelTests

        /// An s_server whose certificate names `names`, and a relay registering it as
        /// `localhost` and `127.0.0.1`.
        struct Setup {
            let pki: TestPKI
            let origin: TLSAppServer
            let relay: RelayProcess

            init(names: String = TestPKI.loopbackNames, serverOptions: [String] = []) throws {
                pki = try TestPKI()
                let identity = try pki.issue("origin", names: names)
                origin = try TLSAppServer(cert: identity.cert, key: identity.key, options: serverOptions)
                relay = try RelayProcess(config: RelayConfigText.proxy(["server localhost:\(origin.port)",
                                                                        "server 127.0.0.1:\(origin.port)"]))
            }

            func stop() {
                relay.stop()
                origin.stop()
            }

            func options(_ tls: ClientTLSOptions) throws -> RelayTunnelOptions {
                var options = try Base.options(relay)
                options.serverTLS = tls
                return options
            }
        }

        /// `GET /` to s_server's `-www` page; the answer's first line.
        static func fetchStatusPage(_ tunnel: RelayTunnel) async throws -> String {
            try await tunnel.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
            let answer = try await Base.readToEOF(tunnel)
            return String(decoding: answer, as: UTF8.self)
        }

        static func connectFailure(_ options: RelayTunnelOptions, host: String = "localhost", port: UInt16) async -> RelayClientError? {
            await Base.failure { () async throws(RelayClientError) in
                try await RelayTunnel(options: options).connect(host: host, port: port)
            }
        }

        @Test("verified TLS 1.3 to the app server through the tunnel")
        func verified() async throws {
            let setup = try Setup()
            defer { setup.stop() }
            let tunnel = try await Base.open(try setup.options(ClientTLSOptions(caFile: setup.pki.caFile)),
                                             host: "localhost", port: setup.origin.port)
            #expect(tunnel.serverTLSVersion == .tls1_3)
            let page = try await Self.fetchStatusPage(tunnel)
            #expect(page.hasPrefix("HTTP/1.0 200"), "\(page.prefix(200))")
            #expect(page.contains(TLSOrigin.greeting))
            await tunnel.close()
        }

        @Test("a certificate for another host, an unknown CA: typed TLS errors, no failover")
        func verificationFailures() async throws {
            let wrongHost = try Setup(names: "DNS:other.example")
            defer { wrongHost.stop() }
            let mismatch = await Self.connectFailure(try wrongHost.options(ClientTLSOptions(caFile: wrongHost.pki.caFile)),
                                                     port: wrongHost.origin.port)
            #expect(mismatch?.code == .tlsHostMismatch, "\(String(describing: mismatch))")

            let setup = try Setup()
            defer { setup.stop() }
            let systemTrust = try setup.options(ClientTLSOptions())
            let untrusted = await Self.connectFailure(systemTrust, port: setup.origin.port)
            #expect(untrusted?.code == .tlsCertUntrusted, "\(String(describing: untrusted))")
            #expect(systemTrust.relays.backoffEnd(of: systemTrust.relays.relays[0]) == nil,
                    "the app server's certificate is no fault of the relay")
        }

        @Test("a server offering only TLS 1.2: refused with 1.3 alone, spoken with GDEnableTLS1.2")
        func versionToggles() async throws {
            let setup = try Setup(serverOptions: ["-tls1_2"])
            defer { setup.stop() }
            let only13 = try #require(try? TLSVersionSet.parse(["1.3"]).get())
            let refused = await Self.connectFailure(try setup.options(ClientTLSOptions(versions: only13, caFile: setup.pki.caFile)),
                                                    port: setup.origin.port)
            #expect(refused?.code == .tlsVersion, "\(String(describing: refused))")

            let toggled = try #require(try? TLSVersionSet.parse(["GDEnableTLS1.2"]).get())
            let tunnel = try await Base.open(try setup.options(ClientTLSOptions(versions: toggled, caFile: setup.pki.caFile)),
                                             host: "localhost", port: setup.origin.port)
            #expect(tunnel.serverTLSVersion == .tls1_2)
            #expect(try await Self.fetchStatusPage(tunnel).hasPrefix("HTTP/1.0 200"))
        }

        @Test("through the relay's HTTPS listener: TLS inside TLS; the relay's CA is its own option")
        func httpsRelay() async throws {
            let certs = try TestCertificates()
            let pki = try TestPKI()
            let identity = try pki.issue("origin", names: TestPKI.loopbackNames)
            let origin = try TLSAppServer(cert: identity.cert, key: identity.key)
            defer { origin.stop() }
            let rules = "server localhost:\(origin.port)\nserver 127.0.0.1:\(origin.port)\n"
            let relay = try RelayProcess(config: HTTPSListenerTests.config(certs, server: try certs.issueServer(),
                                                                           extra: rules, upstreamPorts: []))
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first)
            var options = RelayTunnelOptions(relays: try RelaySelector(parsing: ["https://127.0.0.1:\(port)"]),
                                             relayTLS: ClientTLSOptions(caFile: certs.caCert),
                                             serverTLS: ClientTLSOptions(caFile: pki.caFile), transport: Base.transport)
            let tunnel = try await Base.open(options, host: "localhost", port: origin.port)
            #expect(try await Self.fetchStatusPage(tunnel).contains(TLSOrigin.greeting))
            await tunnel.close()
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close'")
            #expect(close.first?["client_tls_version"] == "TLSv1.3", "\(relay.audit.dump())")

            // The app server's CA does not vouch for the relay.
            options.relays = try RelaySelector(parsing: ["https://127.0.0.1:\(port)"])
            options.relayTLS = ClientTLSOptions(caFile: pki.caFile)
            let untrusted = await Self.connectFailure(options, port: origin.port)
            #expect(untrusted?.code == .tlsCertUntrusted, "\(String(describing: untrusted))")
        }
    }
}
