import Glibc
@testable import RelayClient
import RelayCore
import Synchronization
import Testing

/// The final Negotiate token on a success (RFC 4559 §5) is checked by every path that
/// answers a Negotiate challenge: a token the initiator rejects fails the connection as
/// `mutual-auth-failed` before a byte of the app's goes out on it. A success without a
/// token is taken. The initiator is scripted; the real one against a KDC and dynrelay is in
/// the integration suite.
@Suite struct NegotiateMutualAuthTests {
    typealias Scripted = RelayTunnelScriptedTests

    /// The one token that proves the peer, and a forged one.
    static let proof = "Negotiate qg=="      // [0xAA]
    static let forged = "Negotiate uw=="     // [0xBB]

    /// Sends one first token, then completes on `[0xAA]` and rejects anything else, as
    /// GSS-API rejects an AP-REP made without the service's key.
    final class ProvingInitiator: NegotiateInitiator {
        private let complete = Atomic(false)

        var isComplete: Bool { complete.load(ordering: .relaxed) }

        func step(_ input: [UInt8]?) throws(ClientAuthError) -> [UInt8] {
            guard let input else { return [1] }
            guard input == [0xAA] else { throw ClientAuthError.negotiateFailed("forged AP-REP") }
            complete.store(true, ordering: .relaxed)
            return []
        }
    }

    static let kerberos = ClientCredentials.kerberos({ _, _ throws(ClientAuthError) in ProvingInitiator() })
    static let challenge = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Negotiate\r\nContent-Length: 0\r\n\r\n"

    static func connected(_ finalHeader: String?) -> String {
        "HTTP/1.1 200 Connection established\r\n" + (finalHeader.map { "Proxy-Authenticate: \($0)\r\n" } ?? "") + "\r\n"
    }

    @Test func aTunnelWhoseRelayForgesTheFinalTokenIsClosedUnusedAndTheRelayBacksOff() async throws {
        let relay = try ScriptedRelay([.sendText(Self.challenge), .readHead, .sendText(Self.connected(Self.forged)), .readUntilEOF])
        defer { relay.stop() }
        let endpoint = try Scripted.endpoint(relay.port)
        let tunnel = RelayTunnel(options: Scripted.options([endpoint], credentials: Self.kerberos))
        let error = await Scripted.failure { () async throws(RelayClientError) in
            try await tunnel.connect(host: "app.corp.example", port: 443)
        }
        #expect(error?.code == .mutualAuthFailed, "\(String(describing: error))")
        #expect(error?.message.contains("forged AP-REP") == true, "GSS-API's words are kept: \(String(describing: error))")
        #expect(relay.waitUntilFinished())
        #expect(relay.laterHeads.first?.contains("Proxy-Authorization: Negotiate AQ==\r\n") == true, "\(relay.laterHeads)")
        #expect(relay.received.isEmpty, "nothing went through the unproven tunnel")
        #expect(tunnel.options.relays.backoffEnd(of: endpoint) != nil)
        if case .failed = tunnel.state {} else { Issue.record("state \(tunnel.state)") }
    }

    @Test(arguments: [proof, nil])
    func aTunnelWithTheProofOrWithoutAFinalTokenOpens(finalHeader: String?) async throws {
        let relay = try ScriptedRelay([.sendText(Self.challenge), .readHead, .sendText(Self.connected(finalHeader)), .echoUntilEOF])
        defer { relay.stop() }
        let tunnel = try await Scripted.open(relay, credentials: Self.kerberos)
        try await tunnel.write(Array("ping".utf8))
        #expect(try await Scripted.readExactly(4, from: tunnel) == Array("ping".utf8))
        await tunnel.close()
    }

    static func client(_ relay: ScriptedRelay, proxy: ClientCredentials? = nil,
                       server: ClientCredentials? = nil) throws -> RelayHTTPClient {
        RelayHTTPClient(configuration: RelayHTTPClientConfiguration(
            relays: [try Scripted.endpoint(relay.port)], proxyCredentials: proxy, serverCredentials: server,
            transport: ClientTransportOptions(connectTimeout: Scripted.unreached, tlsHandshakeTimeout: Scripted.unreached,
                                              idleTimeout: Scripted.unreached)))
    }

    static func httpFailure(_ body: () async throws(RelayHTTPError) -> Void) async -> RelayHTTPError? {
        do throws(RelayHTTPError) {
            try await body()
            return nil
        } catch {
            return error
        }
    }

    @Test func anHTTPSRequestWhoseTunnelIsNotProvenSendsNoTLSAndFails() async throws {
        let relay = try ScriptedRelay([.sendText(Self.challenge), .readHead, .sendText(Self.connected(Self.forged)), .readUntilEOF])
        defer { relay.stop() }
        let client = try Self.client(relay, proxy: Self.kerberos)
        let error = await Self.httpFailure { () async throws(RelayHTTPError) in
            _ = try await client.execute("GET", "https://app.corp.example/secret")
        }
        #expect(error?.code == .mutualAuthFailed, "\(String(describing: error))")
        #expect(relay.waitUntilFinished())
        #expect(relay.received.isEmpty, "no ClientHello went into the unproven tunnel")
    }

    /// A `200` carrying a final token in `field`, and a cookie the client keeps only from a
    /// response it believed.
    static func ok(_ field: String, _ value: String) -> String {
        "HTTP/1.1 200 OK\r\n\(field): \(value)\r\nSet-Cookie: session=planted\r\nContent-Length: 6\r\n\r\nsecret"
    }

    @Test func anAbsoluteFormAnswerWithAForgedProxyTokenIsNotReturned() async throws {
        let relay = try ScriptedRelay([.sendText(Self.challenge), .readHead, .sendText(Self.ok("Proxy-Authenticate", Self.forged)),
                                       .readUntilEOF])
        defer { relay.stop() }
        let client = try Self.client(relay, proxy: Self.kerberos)
        let error = await Self.httpFailure { () async throws(RelayHTTPError) in
            _ = try await client.execute("GET", "http://app.corp.example/secret")
        }
        #expect(error?.code == .mutualAuthFailed, "\(String(describing: error))")
        #expect(relay.waitUntilFinished(), "the connection was closed, not pooled")
        #expect(client.cookies.isEmpty, "a cookie from the unproven answer was kept: \(client.cookies)")
    }

    @Test func aServerThatForgesItsFinalTokenIsNotBelievedAndOneThatProvesItIs() async throws {
        let challenge = "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Negotiate\r\nContent-Length: 0\r\n\r\n"
        let forging = try ScriptedRelay([.sendText(challenge), .readHead, .sendText(Self.ok("WWW-Authenticate", Self.forged)),
                                         .readUntilEOF])
        defer { forging.stop() }
        let client = try Self.client(forging, server: Self.kerberos)
        let error = await Self.httpFailure { () async throws(RelayHTTPError) in
            _ = try await client.execute("GET", "http://app.corp.example/secret")
        }
        #expect(error?.code == .mutualAuthFailed, "\(String(describing: error))")
        #expect(forging.laterHeads.first?.contains("Authorization: Negotiate AQ==\r\n") == true, "\(forging.laterHeads)")
        #expect(client.cookies.isEmpty, "a cookie from the unproven answer was kept: \(client.cookies)")

        let proving = try ScriptedRelay([.sendText(challenge), .readHead, .sendText(Self.ok("WWW-Authenticate", Self.proof)),
                                         .readUntilEOF])
        defer { proving.stop() }
        let believing = try Self.client(proving, server: Self.kerberos)
        let response = try await believing.execute("GET", "http://app.corp.example/secret")
        #expect(try await response.body.collect(upTo: 64) == Array("secret".utf8))
        #expect(believing.cookies.map(\.name) == ["session"])
    }
}
