import Foundation
import Glibc
import RelayClient
import RelayCore
import Synchronization
import Testing

extension IntegrationSuite {
    /// The client library's tunnel against the real relay: what an app linking RelayClient
    /// gets from dynrelay, checked on the bytes and in the audit trail.
    @Suite("RelayTunnel through dynrelay")
    struct RelayTunnelTests {
        static let transport = ClientTransportOptions(connectTimeout: .seconds(10), tlsHandshakeTimeout: .seconds(10),
                                                      idleTimeout: .seconds(20))

        static func relays(_ urls: String...) throws -> RelaySelector {
            try RelaySelector(parsing: urls)
        }

        static func options(_ relay: RelayProcess, ip: String = "127.0.0.1", port: UInt16? = nil,
                            credentials: ClientCredentials? = nil) throws -> RelayTunnelOptions {
            let host = ip.contains(":") ? "[\(ip)]" : ip
            return RelayTunnelOptions(relays: try relays("http://\(host):\(port ?? relay.proxyPort)"),
                                      proxyCredentials: credentials, transport: transport)
        }

        static func open(_ options: RelayTunnelOptions, host: String = "127.0.0.1", port: UInt16) async throws -> RelayTunnel {
            let tunnel = RelayTunnel(options: options)
            try await tunnel.connect(host: host, port: port)
            return tunnel
        }

        /// The error `body` throws, or nil.
        static func failure(_ body: () async throws(RelayClientError) -> Void) async -> RelayClientError? {
            do throws(RelayClientError) {
                try await body()
                return nil
            } catch {
                return error
            }
        }

        /// Reads until end of stream (bounded by the idle timeout and a count).
        static func readToEOF(_ tunnel: RelayTunnel) async throws -> [UInt8] {
            var all: [UInt8] = []
            for _ in 0..<1_000_000 {
                let chunk = try await tunnel.read()
                if chunk.isEmpty { return all }
                all += chunk
            }
            throw HarnessError("no end of stream")
        }

        /// One write, then its echo read back in full; byte-exact or it throws.
        static func echoRoundTrip(_ tunnel: RelayTunnel, _ bytes: [UInt8]) async throws {
            try await tunnel.write(bytes)
            var echoed: [UInt8] = []
            while echoed.count < bytes.count {
                let chunk = try await tunnel.read(maxBytes: bytes.count - echoed.count)
                if chunk.isEmpty { throw HarnessError("end of stream after \(echoed.count) of \(bytes.count) echoed bytes") }
                echoed += chunk
            }
            guard echoed == bytes else { throw HarnessError("the echo of \(bytes.count) bytes is not byte-exact") }
        }

        @Test("bytes both ways with half-close; the close row counts them")
        func bothWaysWithHalfClose() async throws {
            let before = PatternBytes.make(count: 200_000, seed: 41)
            let after = PatternBytes.make(count: 65_536, seed: 42)
            let server = try DuplexServer(downBeforeEOF: before, downAfterEOF: after)
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(server.port)"]))
            defer { relay.stop() }
            let tunnel = try await Self.open(try Self.options(relay), port: server.port)
            let upload = PatternBytes.make(count: 1 << 20, seed: 43)
            try await tunnel.write(upload)
            try await tunnel.shutdownWrite()
            let download = try await Self.readToEOF(tunnel)
            #expect(download.count == before.count + after.count)
            #expect(download == before + after, "what the server sent before and after our FIN, in order")
            #expect(eventually { server.streams.count == 1 })
            #expect(server.streams.first == ReceivedStream(count: upload.count, sha256: SHA256Hasher.hex(upload), sawEOF: true))
            await tunnel.close()
            let target = "127.0.0.1:\(server.port)"
            let closes = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", [target])
            #expect(closes.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(closes.first?["bytes_up"] == String(upload.count))
            #expect(closes.first?["bytes_down"] == String(before.count + after.count))
        }

        @Test("403 and 502 refusals arrive as typed errors with the relay's reason code")
        func refusals() async throws {
            let closedPort = try TestListener.refusedPort()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(closedPort)"]))
            defer { relay.stop() }
            let options = try Self.options(relay)
            let unregistered = await Self.failure { () async throws(RelayClientError) in
                try await RelayTunnel(options: options).connect(host: "unregistered.example", port: 443)
            }
            #expect(unregistered?.code == .relayRefused)
            #expect(unregistered?.httpStatus == 403)
            #expect(unregistered?.reasonCode == "not-registered")
            let refused = await Self.failure { () async throws(RelayClientError) in
                try await RelayTunnel(options: options).connect(host: "127.0.0.1", port: closedPort)
            }
            #expect(refused?.code == .relayRefused)
            #expect(refused?.httpStatus == 502)
            #expect(refused?.reasonCode == "upstream-refused")
            Expect.refusedRow(relay, reason: "not-registered", status: 403, target: "unregistered.example:443")
            Expect.failedOpenRows(relay, kind: "tunnel", reason: "upstream-refused", status: 502, target: "127.0.0.1:\(closedPort)")
        }

        /// Basic, Digest and NTLM answered on a 407, each checked in the open row; NTLM's
        /// three legs ride one connection.
        @Test("proxy authentication: Basic, Digest and NTLM open the tunnel; a wrong password is proxy-auth-failed",
              arguments: ["basic", "digest", "ntlm"])
        func proxyAuthentication(scheme: String) async throws {
            let echo = try EchoServer()
            let line = scheme == "ntlm" ? "auth ntlm domain=IT" : "auth \(scheme) realm=it"
            let relay = try AuthFixtures.relay([line, "auth-lockout failures=100 source-failures=100"],
                                               servers: ["server 127.0.0.1:\(echo.port)"])
            defer { relay.stop() }
            let credentials = ClientCredentials(user: AuthFixtures.user, password: AuthFixtures.password)
            let tunnel = try await Self.open(try Self.options(relay, credentials: credentials), port: echo.port)
            try await Self.echoRoundTrip(tunnel, PatternBytes.make(count: 100_000, seed: 44))
            await tunnel.close()
            let opens = relay.audit.waitForEvents(where: "event = 'tunnel-open' AND target = ?", ["127.0.0.1:\(echo.port)"])
            #expect(opens.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(opens.first?["principal"] == AuthFixtures.user)
            #expect(opens.first?["scheme"]?.lowercased() == scheme)

            let wrong = ClientCredentials(user: AuthFixtures.user, password: "not the password")
            let started = ContinuousClock.now
            let refused = await Self.failure { () async throws(RelayClientError) in
                try await RelayTunnel(options: try! Self.options(relay, credentials: wrong)).connect(host: "127.0.0.1", port: echo.port)
            }
            #expect(refused?.code == .proxyAuthFailed, "\(String(describing: refused))")
            #expect(refused?.httpStatus == 407)
            #expect(refused?.reasonCode == "auth-failed")
            #expect(ContinuousClock.now - started < .seconds(8), "refused once, not retried until a timeout")
        }

        @Test("a relay listening on [::1]")
        func ipv6Relay() async throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["listen [::1]:0", "server 127.0.0.1:\(echo.port)"]))
            defer { relay.stop() }
            let listener = try #require(relay.listeners.first { $0.address == "[::1]" }, "listeners: \(relay.listeners)")
            let tunnel = try await Self.open(try Self.options(relay, ip: "::1", port: listener.port), port: echo.port)
            try await Self.echoRoundTrip(tunnel, Array("over IPv6 to the relay".utf8))
            try await tunnel.shutdownWrite()
            #expect(try await Self.readToEOF(tunnel) == [])
            let opens = relay.audit.waitForEvents(where: "event = 'tunnel-open' AND target = ?", ["127.0.0.1:\(echo.port)"])
            #expect(opens.first?["client"]?.contains("::1") == true, "audit:\n\(relay.audit.dump())")
        }

        /// Resident memory of this process, in KiB.
        static func residentKiB() -> Int {
            let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }

        @Test("memory per idle open tunnel (printed, not asserted)")
        func memoryPerIdleTunnel() async throws {
            // An app server nobody accepts for: the kernel completes the handshakes, and no
            // thread of this process serves them, so the growth measured is the tunnels'.
            let idleServer = try TestListener(backlog: 1024)
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(idleServer.port)"]))
            defer { relay.stop() }
            let options = try Self.options(relay)
            var tunnels = [try await Self.open(options, port: idleServer.port)]
            let count = 200
            let rss0 = Self.residentKiB()
            for _ in 0..<count { tunnels.append(try await Self.open(options, port: idleServer.port)) }
            let rss1 = Self.residentKiB()
            // The GDSocket-style adapter adds a reading and a writing task to each.
            let opened = OpenCounter()
            var sockets: [TunnelSocket] = []
            for _ in 0..<count {
                let socket = TunnelSocket(host: "127.0.0.1", port: idleServer.port, options: options)
                socket.delegate = opened
                socket.connect()
                sockets.append(socket)
            }
            let deadline = ContinuousClock.now + .seconds(30)
            while opened.count.load(ordering: .relaxed) < count && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let rss2 = Self.residentKiB()
            print("RelayTunnel memory per idle open tunnel over \(count) tunnels: \((rss1 - rss0) * 1024 / count) B resident;"
                  + " TunnelSocket: \((rss2 - rss1) * 1024 / count) B resident")
            #expect(tunnels.allSatisfy { $0.state == .open })
            #expect(opened.count.load(ordering: .relaxed) == count)
            for socket in sockets { socket.disconnect() }
            for tunnel in tunnels { await tunnel.close() }
        }
    }
}

/// Counts `onOpen`s, for the memory measurement.
final class OpenCounter: TunnelSocketDelegate {
    let count = Atomic<Int>(0)
    func onOpen(_ socket: TunnelSocket) { count.add(1, ordering: .relaxed) }
    func onRead(_ socket: TunnelSocket) {}
    func onClose(_ socket: TunnelSocket) {}
    func onErr(_ socket: TunnelSocket, error: RelayClientError) {}
}
