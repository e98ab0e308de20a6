import Glibc
@testable import RelayClient
import RelayCore
import Synchronization
import Testing

/// Relays that break the protocol in ways a single scripted connection cannot show: a
/// reset mid-handshake, a 407 on every new connection.
@Suite struct RelayTunnelBadRelayTests {
    typealias Scripted = RelayTunnelScriptedTests

    /// Reads the request head, byte by byte, up to its blank line.
    static func readHead(_ fd: Int32) -> String {
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.ends(with: [13, 10, 13, 10]), recv(fd, &byte, 1, 0) == 1 { head.append(byte) }
        return String(decoding: head, as: UTF8.self)
    }

    @Test(arguments: ["", "HTTP/1.1 200 Conn"])
    func resetMidHandshakeIsUnreachableAndNeverHangs(partial: String) async throws {
        let server = try LoopbackServer { fd in
            _ = Self.readHead(fd)
            LoopbackServer.sendAll(fd, Array(partial.utf8))
            LoopbackServer.reset(fd)
        }
        let tunnel = RelayTunnel(options: Scripted.options([try Scripted.endpoint(server.port)]))
        let started = ContinuousClock.now
        let error = await Scripted.failure { () async throws(RelayClientError) in try await tunnel.connect(host: "a", port: 1) }
        #expect(error?.code == .relayUnreachable, "not relay-timeout: \(String(describing: error))")
        #expect(ContinuousClock.now - started < Scripted.hangBound)
    }

    /// A relay that closes after every 407 and challenges again on the next connection:
    /// one answer, then `proxy-auth-failed`, not a loop.
    @Test func challengeOnEveryConnectionEndsAfterOneAnswer() async throws {
        let heads = Mutex<[String]>([])
        let reply = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"it\"\r\n"
            + "Content-Length: 14\r\nConnection: close\r\n\r\nauth-required\n"
        let server = try LoopbackServer(connections: 10) { fd in
            let head = Self.readHead(fd)
            heads.withLock { $0.append(head) }
            LoopbackServer.sendAll(fd, Array(reply.utf8))
            close(fd)
        }
        let options = Scripted.options([try Scripted.endpoint(server.port)], credentials: ClientCredentials(user: "u", password: "p"))
        let error = await Scripted.failure { () async throws(RelayClientError) in
            try await RelayTunnel(options: options).connect(host: "a.example", port: 1)
        }
        #expect(error?.code == .proxyAuthFailed)
        #expect(error?.reasonCode == "auth-required")
        let seen = heads.withLock { $0 }
        #expect(seen.count == 2, "\(seen)")
        #expect(seen.last?.contains("Proxy-Authorization: Basic dTpw\r\n") == true)
    }
}
