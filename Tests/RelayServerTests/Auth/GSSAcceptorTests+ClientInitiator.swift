import KerberosTestSupport
import RelayClient
import RelayCore
import RelayServer
import Testing

/// The client library's Negotiate initiator against the relay's acceptor and a real MIT
/// KDC. In the acceptor's suite because the realm's process-wide krb5 settings allow one
/// Kerberos suite per process.
extension GSSAcceptorTests {
    @Test func theClientSessionsNegotiateTokenIsAcceptedWithMutualAuthentication() throws {
        let kdc = try KerberosRealmTrait.realm()
        let context = GSSAcceptContext(credential: try Self.credential(kdc))
        var session = ClientAuthSession(credentials: .kerberos(credentialCache: kdc.credentialCache),
                                        host: "127.0.0.1", peer: .proxy)
        let value = try #require(try session.answer(headerValues: ["Negotiate", #"Basic realm="relay""#],
                                                    method: "CONNECT", target: "app.example.test:443"))
        #expect(session.scheme == .negotiate)
        let authorization = try ProxyAuthorization(parsing: value)
        #expect(authorization.hasScheme("Negotiate"))
        let token = try AuthCrypto.base64Decode(try #require(authorization.token68), maxDecodedCount: 1 << 16)
        // RFC 4559: SPNEGO first, in the InitialContextToken framing.
        #expect(token.first == 0x60)

        guard case .complete(let principal, let reply?) = context.accept(token: token) else {
            Issue.record("the acceptor refused the client's token")
            return
        }
        #expect(principal == TestKDC.userPrincipal)
        try session.accepted(AuthChallenge.parse(headerValues: ["Negotiate " + AuthCrypto.base64Encode(reply)]))
    }

    @Test func aForgedFinalTokenFailsMutualAuthentication() throws {
        let kdc = try KerberosRealmTrait.realm()
        let context = GSSAcceptContext(credential: try Self.credential(kdc))
        var session = ClientAuthSession(credentials: .kerberos(credentialCache: kdc.credentialCache), host: "127.0.0.1")
        let value = try #require(try session.answer(headerValues: ["Negotiate"], method: "GET", target: "/"))
        let token = try AuthCrypto.base64Decode(value.dropFirst("Negotiate ".count), maxDecodedCount: 1 << 16)
        guard case .complete(_, var reply?) = context.accept(token: token) else {
            Issue.record("the acceptor refused the client's token")
            return
        }
        reply[reply.count - 4] ^= 0x5A
        do {
            try session.accepted(AuthChallenge.parse(headerValues: ["Negotiate " + AuthCrypto.base64Encode(reply)]))
            Issue.record("a forged AP-REP was taken as the relay's proof")
        } catch {
            #expect(error.code == "mutual-auth-failed")
            #expect(error.detail?.isEmpty == false, "GSS-API's words: \(error)")
        }
    }

    @Test func aBareKerberosTokenIsAcceptedToo() throws {
        let kdc = try KerberosRealmTrait.realm()
        let initiator = try GSSNegotiateInitiator(host: "127.0.0.1", mechanism: .kerberos, credentialCache: kdc.credentialCache)
        let token = try initiator.step(nil)
        #expect(token.first == 0x60 && token.firstRange(of: [0x2B, 0x06, 0x01, 0x05, 0x05, 0x02] as [UInt8]) == nil)
        guard case .complete(TestKDC.userPrincipal, let reply?) = GSSAcceptContext(credential: try Self.credential(kdc)).accept(token: token) else {
            Issue.record("the acceptor refused a bare Kerberos token")
            return
        }
        #expect(!initiator.isComplete)
        #expect(try initiator.step(reply).isEmpty)
        #expect(initiator.isComplete)
    }

    @Test func anUnknownServiceOrNoTicketFallsBackOrFailsWithGSSText() throws {
        let kdc = try KerberosRealmTrait.realm()
        var withPassword = ClientAuthSession(
            credentials: ClientCredentials(user: "alice", password: "secret",
                                           negotiate: GSSNegotiateInitiator.factory(credentialCache: kdc.credentialCache)),
            host: "nowhere.example.test")
        let value = try withPassword.answer(headerValues: ["Negotiate", #"Basic realm="r""#], method: "GET", target: "/")
        #expect(value?.hasPrefix("Basic ") == true)

        var kerberosOnly = ClientAuthSession(credentials: .kerberos(credentialCache: kdc.credentialCache),
                                             host: "nowhere.example.test")
        do {
            _ = try kerberosOnly.answer(headerValues: ["Negotiate"], method: "GET", target: "/")
            Issue.record("a ticket for an unknown service was obtained")
        } catch {
            #expect(error.code == "negotiate-failed")
            #expect(error.detail?.isEmpty == false, "\(error)")
        }

        var noCache = ClientAuthSession(credentials: .kerberos(credentialCache: "FILE:" + kdc.directory + "/no-such-ccache"),
                                        host: "127.0.0.1")
        #expect(throws: ClientAuthError.noCredentials) {
            try noCache.answer(headerValues: ["Negotiate"], method: "GET", target: "/")
        }
    }
}
