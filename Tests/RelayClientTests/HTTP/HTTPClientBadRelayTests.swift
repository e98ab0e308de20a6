import Glibc
@testable import RelayClient
import RelayCore
import Synchronization
import Testing

/// `RelayHTTPClient` against relays that break the protocol: a reset mid-handshake, a
/// `200` to CONNECT with bytes behind it, a `407` on every connection. Each ends in a typed
/// error, never a hang, and nothing of the request goes where it does not belong.
@Suite struct HTTPClientBadRelayTests {
    typealias Scripted = RelayTunnelScriptedTests
    typealias BadRelay = RelayTunnelBadRelayTests

    static func client(_ port: UInt16, proxy: ClientCredentials? = nil) throws -> RelayHTTPClient {
        RelayHTTPClient(configuration: RelayHTTPClientConfiguration(
            relays: [try Scripted.endpoint(port)], proxyCredentials: proxy,
            transport: ClientTransportOptions(connectTimeout: Scripted.unreached, tlsHandshakeTimeout: Scripted.unreached,
                                              idleTimeout: Scripted.unreached)))
    }

    static func failure(_ client: RelayHTTPClient, _ url: String) async -> RelayHTTPError? {
        do throws(RelayHTTPError) {
            _ = try await client.execute("GET", url)
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: ["https://app.corp.example/", "http://app.corp.example/"], ["", "HTTP/1.1 200 Conn"])
    func resetMidHandshakeIsATypedResetAndNeverHangs(url: String, partial: String) async throws {
        let server = try LoopbackServer { fd in
            _ = BadRelay.readHead(fd)
            LoopbackServer.sendAll(fd, Array(partial.utf8))
            LoopbackServer.reset(fd)
        }
        let error = await Self.failure(try Self.client(server.port), url)
        #expect(error?.code == .transport, "\(String(describing: error))")
        #expect(error?.transport?.code == .connectionReset, "\(String(describing: error))")
    }

    /// Cancelling says nothing about the relay: no relay of the list goes into back-off (the
    /// selector is shared with tunnels) and the request goes to no other relay.
    @Test func aRequestCancelledWhileTheRelayThinksPutsNoRelayInBackOff() async throws {
        let first = try ScriptedRelay([.hold])
        let second = try ScriptedRelay([.hold])
        defer { first.stop(); second.stop() }
        let relays = [try Scripted.endpoint(first.port, priority: 1), try Scripted.endpoint(second.port, priority: 2)]
        let selector = RelaySelector(relays)
        let client = RelayHTTPClient(configuration: RelayHTTPClientConfiguration(
            relays: selector,
            transport: ClientTransportOptions(connectTimeout: Scripted.unreached, tlsHandshakeTimeout: Scripted.unreached,
                                              idleTimeout: Scripted.unreached)))
        let request = Task { await Self.failure(client, "https://app.corp.example/") }
        // Long: in a full parallel run this task may wait many seconds for a pool thread.
        let deadline = ContinuousClock.now + .seconds(60)
        while !first.requestHead.hasPrefix("CONNECT app.corp.example:443 "), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(first.requestHead.hasPrefix("CONNECT app.corp.example:443 "), "\(first.requestHead)")
        request.cancel()
        let error = await request.value
        #expect(error?.transport?.code == .cancelled, "\(String(describing: error))")
        #expect(selector.backoffEnd(of: relays[0]) == nil)
        #expect(selector.backoffEnd(of: relays[1]) == nil)
        #expect(second.requestHead.isEmpty, "the cancelled request went on to the next relay")
    }

    @Test func bytesBehindThe200ToConnectAreABadResponseAndNoTLSIsSent() async throws {
        let forged = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nforge"
        let relay = try ScriptedRelay([.sendText(Scripted.established + forged), .readUntilEOF])
        defer { relay.stop() }
        let error = await Self.failure(try Self.client(relay.port), "https://app.corp.example/")
        #expect(error?.code == .badResponse, "\(String(describing: error))")
        #expect(relay.waitUntilFinished())
        #expect(relay.received.isEmpty, "the connection was closed before a ClientHello")
    }

    @Test(arguments: ["https://app.corp.example/", "http://app.corp.example/"])
    func a407OnEveryConnectionEndsAfterOneAnswer(url: String) async throws {
        let heads = Mutex<[String]>([])
        let reply = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"it\"\r\n"
            + "Content-Length: 14\r\nConnection: close\r\n\r\nauth-required\n"
        let server = try LoopbackServer(connections: 10) { fd in
            let head = BadRelay.readHead(fd)
            heads.withLock { $0.append(head) }
            LoopbackServer.sendAll(fd, Array(reply.utf8))
            close(fd)
        }
        let error = await Self.failure(try Self.client(server.port, proxy: ClientCredentials(user: "u", password: "p")), url)
        #expect(error?.code == .proxyAuthFailed, "\(String(describing: error))")
        let seen = heads.withLock { $0 }
        #expect(seen.count == 2, "one answer, then no more: \(seen)")
        #expect(seen.last?.contains("Proxy-Authorization: Basic dTpw\r\n") == true)
    }
}
