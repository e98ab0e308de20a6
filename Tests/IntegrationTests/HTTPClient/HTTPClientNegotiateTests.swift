import Glibc
import KerberosTestSupport
import RelayClient
import RelayCore
import Testing

extension IntegrationSuite {
    /// Negotiate to the relay with a ticket from a throwaway MIT KDC, through the client's
    /// own GSS-API initiator.
    @Suite("HTTP client Negotiate")
    struct HTTPClientNegotiateTests {
        @Test("a 407 Negotiate answered from the credential cache, absolute-form and CONNECT")
        func negotiate() async throws {
            let kdc = try TestKDC()
            defer { kdc.stop() }
            // The in-process initiator finds the KDC through the realm's variables.
            try await kdc.withProcessRealm {
                let origin = try TLSScriptedOrigin()
                defer { origin.stop() }
                let relay = try RelayProcess(config: RelayConfigText.proxy([
                    "auth negotiate keytab=\(kdc.keytabPath) principal=\(TestKDC.servicePrincipal)",
                    "server 127.0.0.1:\(origin.port)", "server localhost:\(origin.port)",
                ]), environment: kdc.environment)
                defer { relay.stop() }
                let client = try HTTPClientTests.client(relay, caFile: origin.caFile,
                                                        proxy: .kerberos(credentialCache: kdc.credentialCache))
                for url in ["http://127.0.0.1:\(origin.port)/hello", "https://localhost:\(origin.port)/hello"] {
                    let response = try await client.execute("GET", url)
                    #expect(response.status == 200, "\(url): \(relay.stderr.suffix(1500))")
                    #expect(try await HTTPClientTests.text(response).hasPrefix("conn "))
                }
                let rows = relay.audit.waitForEvents(where: "event LIKE '%-open' AND scheme = 'Negotiate'")
                #expect(rows.compactMap { $0["principal"] }.contains(TestKDC.userPrincipal), "\(relay.audit.dump())")
            }
        }
    }
}
