import Foundation
import Glibc
import RelayClient
import RelayCore
import Testing

extension IntegrationSuite {
    /// Failover between real relays: the first down, the second stopped mid-run, the third
    /// serving.
    @Suite("RelayTunnel failover")
    struct RelayTunnelFailoverTests {
        typealias Base = RelayTunnelTests

        @Test("down, then stopped: new tunnels move on; an open tunnel is not re-sent elsewhere")
        func threeRelays() async throws {
            let echo = try EchoServer()
            let down = try TestListener.refusedPort()
            let second = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(echo.port)"]))
            defer { second.stop() }
            let third = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(echo.port)"]))
            defer { third.stop() }
            let selector = try RelaySelector(parsing: ["http://127.0.0.1:\(down)", "http://127.0.0.1:\(second.proxyPort)",
                                                       "http://127.0.0.1:\(third.proxyPort)"])
            let options = RelayTunnelOptions(relays: selector, transport: Base.transport, relayAnswerTimeout: .seconds(3))

            let first = try await Base.open(options, port: echo.port)
            #expect(first.relay == selector.relays[1], "the down relay is skipped for the second")
            #expect(selector.backoffEnd(of: selector.relays[0]) != nil)
            try await Base.echoRoundTrip(first, Array("before the stop".utf8))
            #expect(second.audit.waitForEvents(where: "event = 'tunnel-open'").count == 1)

            kill(second.pid, SIGTERM)
            let deadline = ContinuousClock.now + .seconds(10)
            while second.isAlive && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(!second.isAlive, "the second relay exited")

            let next = try await Base.open(options, port: echo.port)
            #expect(next.relay == selector.relays[2])
            try await Base.echoRoundTrip(next, Array("after the stop".utf8))

            // The tunnel on the stopped relay ended with it: its bytes go nowhere else.
            let late = await Base.failure { () async throws(RelayClientError) in
                try await first.write(Array("never twice".utf8))
                let answer = try await first.read()
                if !answer.isEmpty { throw RelayClientError(.closed, "an answer came through a stopped relay") }
            }
            #expect(late == nil || late?.code == .connectionReset, "\(String(describing: late))")
            #expect(first.relay == selector.relays[1])
            let opens = third.audit.waitForEvents(where: "event = 'tunnel-open'")
            #expect(opens.count == 1, "only the new tunnel reached the third relay:\n\(third.audit.dump())")
            await first.close()
            await next.close()
        }
    }
}
