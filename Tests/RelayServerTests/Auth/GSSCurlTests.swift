import KerberosTestSupport
import Foundation
import RelayServer
import Testing

extension GSSAcceptorTests {
    /// Real `curl --proxy-negotiate` against a proxy at 127.0.0.1 gets a ticket from the
    /// fixture's KDC for exactly the principal in the relay's keytab, and the token it sends
    /// authenticates alice to the acceptor.
    @Test func curlProxyNegotiateTokenAuthenticatesAlice() throws {
        let kdc = try KerberosRealmTrait.realm()
        // A ccache of its own, so the service ticket in it can only have come from curl.
        let ccache = "FILE:" + kdc.directory + "/curl-\(UUID().uuidString).ccache"
        try kdc.run("kinit", [TestKDC.userPrincipal], input: TestKDC.userPassword + "\n",
                    extraEnvironment: ["KRB5CCNAME": ccache])
        let stub = try NegotiateProxyStub()
        defer { stub.stop() }

        try kdc.run("curl", ["-sS", "-o", "/dev/null", "--max-time", "20",
                             "-x", "http://127.0.0.1:\(stub.port)", "--proxy-negotiate", "-U", ":",
                             "http://example.invalid/"],
                    extraEnvironment: ["KRB5CCNAME": ccache])

        let tickets = try kdc.run("klist", [ccache]).stdout
        #expect(tickets.contains(TestKDC.servicePrincipal), "\(tickets)")
        let header = try #require(stub.received.first, "curl sent no Proxy-Authorization")
        #expect(header.hasPrefix("Negotiate "))
        let token = try #require(Data(base64Encoded: String(header.dropFirst("Negotiate ".count))))

        let result = GSSAcceptContext(credential: try Self.credential(kdc)).accept(token: [UInt8](token))
        guard case .complete(let principal, let reply) = result else {
            Issue.record("curl's token was refused: \(result)")
            return
        }
        #expect(principal == TestKDC.userPrincipal)
        #expect(reply != nil, "curl asks for mutual authentication")
    }
}
