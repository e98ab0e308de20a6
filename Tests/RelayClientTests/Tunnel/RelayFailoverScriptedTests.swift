import Glibc
@testable import RelayClient
import RelayCore
import Testing

/// Failover between scripted relays: which answers move on to the next relay (and put the
/// failed one in back-off), and which are the tunnel's answer.
@Suite struct RelayFailoverScriptedTests {
    typealias Scripted = RelayTunnelScriptedTests

    static func closedPort() throws -> UInt16 {
        let closed = try ScriptedRelay([])
        let port = closed.port
        closed.stop()
        closed.waitUntilFinished()
        return port
    }

    /// Down, overloaded, reset mid-answer, silent: each moves on; the last relay serves.
    @Test func unreachableOverloadedResetAndSilentRelaysAreSkipped() async throws {
        let down = try Self.closedPort()
        let overloaded = try ScriptedRelay([.sendText(Scripted.refusal(503, "Service Unavailable", reason: "overloaded"))])
        let cut = try ScriptedRelay([.sendText("HTTP/1.1 2")])
        let silent = try ScriptedRelay([.hold])
        let serving = try ScriptedRelay([.sendText(Scripted.established), .echoUntilEOF])
        defer { [overloaded, cut, silent, serving].forEach { $0.stop() } }
        let relays = [try Scripted.endpoint(down, priority: 1), try Scripted.endpoint(overloaded.port, priority: 2),
                      try Scripted.endpoint(cut.port, priority: 3), try Scripted.endpoint(silent.port, priority: 4),
                      try Scripted.endpoint(serving.port, priority: 5)]
        let tunnel = RelayTunnel(options: Scripted.options(relays, timeout: .milliseconds(500)))
        try await tunnel.connect(host: "app.corp.example", port: 7)
        #expect(tunnel.relay == relays[4])
        try await tunnel.write(Array("once".utf8))
        #expect(try await Scripted.readExactly(4, from: tunnel) == Array("once".utf8))
        for failed in relays.prefix(4) {
            #expect(tunnel.options.relays.backoffEnd(of: failed) != nil, "\(failed) is in back-off")
        }
        #expect(tunnel.options.relays.backoffEnd(of: relays[4]) == nil)
        // The next tunnel sharing the selector goes straight to the healthy relay.
        #expect(tunnel.options.relays.select() == relays[4])
        await tunnel.close()
    }

    /// A 403 is the destination's verdict, the same on every relay: no failover.
    @Test func forbiddenDoesNotFailOver() async throws {
        let refusing = try ScriptedRelay([.sendText(Scripted.refusal(403, "Forbidden", reason: "not-registered"))])
        let serving = try ScriptedRelay([.sendText(Scripted.established), .hold])
        defer { refusing.stop(); serving.stop() }
        let relays = [try Scripted.endpoint(refusing.port, priority: 1), try Scripted.endpoint(serving.port, priority: 2)]
        let tunnel = RelayTunnel(options: Scripted.options(relays))
        let error = await Scripted.failure { () async throws(RelayClientError) in
            try await tunnel.connect(host: "hr.corp.example", port: 443)
        }
        #expect(error?.httpStatus == 403)
        #expect(error?.reasonCode == "not-registered")
        serving.stop()
        #expect(serving.waitUntilFinished())
        #expect(serving.requestHead == "", "the second relay was never asked")
    }

    /// Every relay failing: the last failure is the answer, typed.
    @Test func everyRelayDownIsRelayUnreachable() async throws {
        let relays = [try Scripted.endpoint(try Self.closedPort(), priority: 1),
                      try Scripted.endpoint(try Self.closedPort(), priority: 1)]
        let tunnel = RelayTunnel(options: Scripted.options(relays, timeout: .seconds(5)))
        let error = await Scripted.failure { () async throws(RelayClientError) in try await tunnel.connect(host: "a", port: 1) }
        #expect(error?.code == .relayUnreachable)
        #expect(error?.errno == ECONNREFUSED)
        if case .failed(let failure) = tunnel.state { #expect(failure == error) } else { Issue.record("state \(tunnel.state)") }
    }
}
