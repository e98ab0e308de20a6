import RelayClient
import RelayCore
import Testing

extension IntegrationSuite {
    /// TLS to the app server that must not be spoken: a certificate for another host, a
    /// version the client has not enabled. Each is a typed error naming the TLS failure.
    @Suite("HTTP client TLS faults")
    struct HTTPClientTLSFaultTests {
        typealias Setup = RelayTunnelTLSTests.Setup

        static func client(_ setup: Setup, tls: ClientTLSOptions) throws -> RelayHTTPClient {
            let endpoint = RelayEndpoint(url: try ClientURL(parsing: "http://127.0.0.1:\(setup.relay.proxyPort)"), priority: 1)
            return RelayHTTPClient(configuration: RelayHTTPClientConfiguration(relays: [endpoint], tls: tls,
                                                                               transport: HTTPClientTests.transport))
        }

        @Test("a certificate for another host is tls-host-mismatch, and the relay is not blamed")
        func hostMismatch() async throws {
            let setup = try Setup(names: "DNS:other.example")
            defer { setup.stop() }
            let client = try Self.client(setup, tls: ClientTLSOptions(caFile: setup.pki.caFile))
            let error = await HTTPClientTests.failure { _ = try await client.execute("GET", "https://localhost:\(setup.origin.port)/") }
            #expect(error?.code == .transport, "\(String(describing: error))")
            #expect(error?.transport?.code == .tlsHostMismatch, "\(String(describing: error))")
            #expect(client.configuration.selector.backoffEnd(of: client.configuration.relays[0]) == nil)
        }

        @Test("a server offering only TLS 1.2 to a client with 1.3 alone is tls-version")
        func versionNotEnabled() async throws {
            let setup = try Setup(serverOptions: ["-tls1_2"])
            defer { setup.stop() }
            let only13 = try #require(try? TLSVersionSet.parse(["1.3"]).get())
            let client = try Self.client(setup, tls: ClientTLSOptions(versions: only13, caFile: setup.pki.caFile))
            let error = await HTTPClientTests.failure { _ = try await client.execute("GET", "https://localhost:\(setup.origin.port)/") }
            #expect(error?.transport?.code == .tlsVersion, "\(String(describing: error))")
        }
    }
}
