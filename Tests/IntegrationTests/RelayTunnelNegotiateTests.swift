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
        /// has to find the KDC.
        static func withRealm<T>(_ kdc: TestKDC, _ body: () async throws -> T) async rethrows -> T {
            try await kdc.withProcessRealm(body)
        }

        /// A relay taking Negotiate with `kdc`'s service key and registering `port`.
        static func relay(_ kdc: TestKDC, serving port: UInt16) throws -> RelayProcess {
            try RelayProcess(config: RelayConfigText.proxy([
                "auth negotiate keytab=\(kdc.keytabPath) principal=\(TestKDC.servicePrincipal)",
                "server 127.0.0.1:\(port)",
            ]), environment: kdc.environment)
        }

        /// Sends a `CONNECT` to `port` carrying `initiator`'s first token; the final token
        /// from the relay's `200`.
        static func finalToken(_ relay: RelayProcess, port: UInt16, _ initiator: GSSNegotiateInitiator) throws -> [UInt8] {
            let socket = try TestSocket.connect(port: relay.proxyPort)
            defer { socket.close() }
            try socket.write("CONNECT 127.0.0.1:\(port) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
                             + "Proxy-Authorization: Negotiate \(AuthCrypto.base64Encode(try initiator.step(nil)))\r\n\r\n")
            let head = String(decoding: try #require(try socket.readHead()), as: UTF8.self)
            #expect(head.hasPrefix("HTTP/1.1 200 "), "\(head)")
            let line = try #require(head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("proxy-authenticate: negotiate ") },
                                    "RFC 4559 §5: the final token rides on the 200\n\(head)")
            return try AuthCrypto.base64Decode(String(line.split(separator: " ").last ?? ""), maxDecodedCount: 1 << 16)
        }

        @Test("a ticket in the credential cache opens the tunnel as alice; no ticket is proxy-auth-failed")
        func negotiate() async throws {
            let kdc = try TestKDC()
            defer { kdc.stop() }
            let echo = try EchoServer()
            let relay = try Self.relay(kdc, serving: echo.port)
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

        @Test("the relay's 200 carries its mutual-authentication token: GSS-API completes on it and rejects it altered")
        func mutualToken() async throws {
            let kdc = try TestKDC()
            defer { kdc.stop() }
            let echo = try EchoServer()
            let relay = try Self.relay(kdc, serving: echo.port)
            defer { relay.stop() }
            try await Self.withRealm(kdc) {
                let initiator = try GSSNegotiateInitiator(host: "127.0.0.1", credentialCache: kdc.credentialCache)
                var altered = try Self.finalToken(relay, port: echo.port, initiator)
                #expect(!initiator.isComplete)
                altered[altered.count - 4] ^= 0x5A
                #expect(throws: ClientAuthError.self, "an altered AP-REP does not complete the context") {
                    try initiator.step(altered)
                }
                // The untouched token, on a fresh handshake's context, does complete it.
                let fresh = try GSSNegotiateInitiator(host: "127.0.0.1", credentialCache: kdc.credentialCache)
                #expect(try fresh.step(try Self.finalToken(relay, port: echo.port, fresh)).isEmpty)
                #expect(fresh.isComplete, "the relay proved it holds the service key")
            }
        }
    }
}
