import Foundation
import Glibc
import KerberosTestSupport
import RelayClient
import RelayCore
import Testing

extension IntegrationSuite {
    /// Negotiate (Kerberos through MIT GSS-API) answered by a `RelayTunnel` from the user's
    /// credential cache, against the real relay and a throwaway KDC.
    @Suite("RelayTunnel Negotiate")
    struct RelayTunnelNegotiateTests {
        /// Points this process's krb5 library at `kdc` for `body`: the in-process initiator
        /// has to find the KDC. The integration run is serialized, so no other test sees it.
        static func withRealm<T>(_ kdc: TestKDC, _ body: () async throws -> T) async rethrows -> T {
            let names = ["KRB5_CONFIG", "KRB5RCACHEDIR"]
            let saved = names.map { name in (name, getenv(name).map { String(cString: $0) }) }
            setenv("KRB5_CONFIG", kdc.krb5ConfigPath, 1)
            setenv("KRB5RCACHEDIR", kdc.directory, 1)
            defer {
                for (name, value) in saved {
                    if let value { setenv(name, value, 1) } else { unsetenv(name) }
                }
            }
            return try await body()
        }

        @Test("a ticket in the credential cache opens the tunnel as alice; no ticket is proxy-auth-failed")
        func negotiate() async throws {
            let kdc = try TestKDC()
            defer { kdc.stop() }
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "auth negotiate keytab=\(kdc.keytabPath) principal=\(TestKDC.servicePrincipal)",
                "server 127.0.0.1:\(echo.port)",
            ]), environment: kdc.environment)
            defer { relay.stop() }
            try await Self.withRealm(kdc) {
                let options = try RelayTunnelTests.options(relay, credentials: ClientCredentials.kerberos(
                    credentialCache: kdc.credentialCache))
                let tunnel = try await RelayTunnelTests.open(options, port: echo.port)
                try await RelayTunnelTests.echoRoundTrip(tunnel, Array("kerberos".utf8))
                await tunnel.close()
                let opens = relay.audit.waitForEvents(where: "event = 'tunnel-open' AND scheme = ?", ["Negotiate"])
                #expect(opens.first?["principal"] == TestKDC.userPrincipal, "audit:\n\(relay.audit.dump())")

                let noTicket = try RelayTunnelTests.options(relay, credentials: ClientCredentials.kerberos(
                    credentialCache: "FILE:" + kdc.directory + "/no-ccache"))
                let refused = await RelayTunnelTests.failure { () async throws(RelayClientError) in
                    try await RelayTunnel(options: noTicket).connect(host: "127.0.0.1", port: echo.port)
                }
                #expect(refused?.code == .proxyAuthFailed, "\(String(describing: refused))")
                #expect(refused?.httpStatus == 407)
            }
        }
    }
}
