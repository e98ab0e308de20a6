import Foundation
import Glibc
import RelayClient
import Testing

extension IntegrationSuite {
    /// The client library's blocking socket against the real relay: what an app linking
    /// RelayClient gets from dynrelay, checked on the bytes and in the audit trail.
    @Suite("RelaySocket through dynrelay")
    struct RelaySocketTests {
        /// Reads until end of stream (bounded by the socket's timeout).
        static func readToEOF(_ socket: RelaySocket) throws -> [UInt8] {
            var all: [UInt8] = []
            while true {
                let chunk = try socket.read()
                if chunk.isEmpty { return all }
                all += chunk
            }
        }

        /// One write, then its echo read back in full; byte-exact or it throws.
        static func echoRoundTrip(_ socket: RelaySocket, _ bytes: [UInt8]) throws {
            try socket.write(bytes)
            var echoed: [UInt8] = []
            while echoed.count < bytes.count {
                let chunk = try socket.read(max: bytes.count - echoed.count)
                if chunk.isEmpty { throw HarnessError("end of stream after \(echoed.count) of \(bytes.count) echoed bytes") }
                echoed += chunk
            }
            guard echoed == bytes else { throw HarnessError("the echo of \(bytes.count) bytes is not byte-exact") }
        }

        @Test("bytes both ways with half-close; the close row counts them")
        func bothWaysWithHalfClose() throws {
            let before = PatternBytes.make(count: 200_000, seed: 41)
            let after = PatternBytes.make(count: 65_536, seed: 42)
            let server = try DuplexServer(downBeforeEOF: before, downAfterEOF: after)
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(server.port)"]))
            defer { relay.stop() }
            let socket = try RelaySocket(proxyIP: "127.0.0.1", proxyPort: relay.proxyPort,
                                         host: "127.0.0.1", port: server.port, timeout: .seconds(20))
            let upload = PatternBytes.make(count: 1 << 20, seed: 43)
            try socket.write(upload)
            socket.shutdownWrite()
            let download = try Self.readToEOF(socket)
            #expect(download.count == before.count + after.count)
            #expect(download == before + after, "what the server sent before and after our FIN, in order")
            #expect(eventually { server.streams.count == 1 })
            #expect(server.streams.first == ReceivedStream(count: upload.count, sha256: SHA256Hasher.hex(upload), sawEOF: true))
            socket.close()
            let target = "127.0.0.1:\(server.port)"
            let closes = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", [target])
            #expect(closes.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(closes.first?["bytes_up"] == String(upload.count))
            #expect(closes.first?["bytes_down"] == String(before.count + after.count))
        }

        @Test("403 and 502 refusals arrive as typed errors with the relay's reason code")
        func refusals() throws {
            let closedPort = try TestListener.refusedPort()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(closedPort)"]))
            defer { relay.stop() }
            let unregistered = #expect(throws: ProxyConnectHandshake.Failure.self) {
                try RelaySocket(proxyIP: "127.0.0.1", proxyPort: relay.proxyPort, host: "unregistered.example", port: 443)
            }
            #expect(unregistered?.status == 403)
            #expect(unregistered?.reason == "not-registered")
            #expect(unregistered?.challenges == [])
            let refused = #expect(throws: ProxyConnectHandshake.Failure.self) {
                try RelaySocket(proxyIP: "127.0.0.1", proxyPort: relay.proxyPort, host: "127.0.0.1", port: closedPort)
            }
            #expect(refused?.status == 502)
            #expect(refused?.reason == "upstream-refused")
            Expect.refusedRow(relay, reason: "not-registered", status: 403, target: "unregistered.example:443")
            Expect.failedOpenRows(relay, kind: "tunnel", reason: "upstream-refused", status: 502, target: "127.0.0.1:\(closedPort)")
        }

        @Test("407 carries the relay's challenge; the same login in extraHeaders opens the tunnel")
        func proxyAuthentication() throws {
            let echo = try EchoServer()
            let relay = try AuthFixtures.relay(["auth basic realm=it"], servers: ["server 127.0.0.1:\(echo.port)"])
            defer { relay.stop() }
            let challenged = #expect(throws: ProxyConnectHandshake.Failure.self) {
                try RelaySocket(proxyIP: "127.0.0.1", proxyPort: relay.proxyPort, host: "127.0.0.1", port: echo.port)
            }
            #expect(challenged?.status == 407)
            #expect(challenged?.reason == "auth-required")
            #expect(challenged?.challenges == ["Basic realm=\"it\", charset=\"UTF-8\""])
            let login = Data("\(AuthFixtures.user):\(AuthFixtures.password)".utf8).base64EncodedString()
            let socket = try RelaySocket(proxyIP: "127.0.0.1", proxyPort: relay.proxyPort, host: "127.0.0.1", port: echo.port,
                                         extraHeaders: [(name: "Proxy-Authorization", value: "Basic \(login)")])
            try Self.echoRoundTrip(socket, PatternBytes.make(count: 100_000, seed: 44))
            let opens = relay.audit.waitForEvents(where: "event = 'tunnel-open' AND target = ?", ["127.0.0.1:\(echo.port)"])
            #expect(opens.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(opens.first?["principal"] == AuthFixtures.user)
            #expect(opens.first?["scheme"] == "Basic")
        }

        @Test("a relay listening on [::1]")
        func ipv6Relay() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["listen [::1]:0", "server 127.0.0.1:\(echo.port)"]))
            defer { relay.stop() }
            let listener = try #require(relay.listeners.first { $0.address == "[::1]" }, "listeners: \(relay.listeners)")
            let socket = try RelaySocket(proxyIP: "::1", proxyPort: listener.port, host: "127.0.0.1", port: echo.port)
            try Self.echoRoundTrip(socket, Array("over IPv6 to the relay".utf8))
            socket.shutdownWrite()
            #expect(try Self.readToEOF(socket) == [])
            let opens = relay.audit.waitForEvents(where: "event = 'tunnel-open' AND target = ?", ["127.0.0.1:\(echo.port)"])
            #expect(opens.first?["client"]?.contains("::1") == true, "audit:\n\(relay.audit.dump())")
        }
    }
}
