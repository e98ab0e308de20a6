import Foundation
import Glibc
import Testing

/// The host's first IPv4 address that is not loopback (from `ip`), if it has one.
func hostInterfaceAddress() -> String? {
    guard let result = try? Subprocess.run("/usr/sbin/ip", ["-4", "-o", "addr", "show", "scope", "global"]) else { return nil }
    for line in result.stdoutText.split(separator: "\n") {
        let fields = line.split(separator: " ")
        if let index = fields.firstIndex(of: "inet"), index + 1 < fields.count {
            return fields[index + 1].split(separator: "/").first.map(String.init)
        }
    }
    return nil
}

extension IntegrationSuite {
    /// The relay never connects to its own listeners, and the host's own addresses are
    /// guarded like loopback.
    @Suite("the relay's own host")
    struct SelfConnectionTests {
        @Test("300 CONNECTs to the relay's own port in one write: the first is refused relay-loop, nothing nests")
        func noTunnelToItself() throws {
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:*", "server 0.0.0.0/0:*"]))
            defer { relay.stop() }
            let own = "127.0.0.1:\(relay.proxyPort)"
            let socket = try TestSocket.connect(port: relay.proxyPort)
            try socket.write(String(repeating: "CONNECT \(own) HTTP/1.1\r\nHost: \(own)\r\n\r\n", count: 300))
            Expect.refusal(try ProxyClient.readResponse(socket), status: 403, reason: "relay-loop")
            #expect(ProxyClient.closes(socket, allowing: 0))
            #expect(try relay.audit.events(where: "event = 'tunnel-open'").isEmpty, "no tunnel was opened")
            Expect.refusedRow(relay, reason: "relay-loop", status: 403, target: own)
            // Also through the unspecified address, which Linux connects to the host itself.
            let (_, viaAny) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "0.0.0.0:\(relay.proxyPort)")
            #expect(viaAny.status == 403)
        }

        @Test("a registered name or a wide block reaching the host's own interface address is guarded")
        func ownInterfaceAddressIsGuarded() throws {
            let address = try #require(hostInterfaceAddress(), "this host has no global IPv4 address to test with")
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 0.0.0.0/0:*"]))
            defer { relay.stop() }
            let (_, refused) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "\(address):\(echo.port)")
            Expect.refusal(refused, status: 403, reason: "guarded-address")
            // Registered by that very address, the host is reachable, as loopback is.
            let named = try RelayProcess(config: RelayConfigText.proxy(["server \(address):\(echo.port)"]))
            defer { named.stop() }
            let (_, allowed) = try ProxyClient.connect(relayPort: named.proxyPort, authority: "\(address):\(echo.port)")
            #expect(allowed.status != 403, "a rule naming the address by address lifts the guard: \(allowed.statusLine)")
        }
    }
}
