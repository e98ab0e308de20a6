import Foundation
import Glibc
import Synchronization
import Testing

/// Accepts and holds every connection without reading a byte: an upstream that stalls.
final class NonReadingServer: UpstreamServer, @unchecked Sendable {
    private let held = Mutex<[TestSocket]>([])

    override init() throws {
        try super.init()
        start()
    }

    override func handle(_ socket: TestSocket, connection: Int) {
        held.withLock { $0.append(socket) }
    }
}

/// Writes `socket` without blocking until the kernel takes no more for `quiet` seconds
/// (bounded by `limit` bytes); returns how many bytes it took.
func fillUntilBlocked(_ socket: TestSocket, limit: Int = 256 << 20, quiet: Double = 0.3) -> Int {
    let chunk = [UInt8](repeating: 0x5a, count: 64 * 1024)
    var total = 0
    var lastProgress = Date()
    while total < limit && Date().timeIntervalSince(lastProgress) < quiet {
        let sent = chunk.withUnsafeBytes { send(socket.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        if sent > 0 {
            total += sent
            lastProgress = Date()
        } else {
            usleep(10_000)
        }
    }
    return total
}

extension IntegrationSuite {
    /// A peer that takes none of the bytes queued for it is cut after `stall-timeout`,
    /// well before the idle timeout: it must not hold the host's socket buffers for minutes.
    @Suite("stall timeout")
    struct StallTests {
        @Test("a tunnel whose upstream stops reading is reset after stall-timeout and audited stalled")
        func stalledTunnel() throws {
            let upstream = try NonReadingServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "server 127.0.0.1:\(upstream.port)", "stall-timeout 1s", "idle-timeout 300s",
            ]))
            defer { relay.stop() }
            let tunnel = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "127.0.0.1:\(upstream.port)")
            let started = Date()
            let queued = fillUntilBlocked(tunnel)
            #expect(queued > 0)
            #expect(StreamEnd.read(tunnel) == .reset)
            #expect(Date().timeIntervalSince(started) < 10, "cut by the stall timeout, not the idle one")
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close'")
            #expect(close.first?["reason"] == "stalled", "audit:\n\(relay.audit.dump())")
            #expect(Int(close.first?["bytes_up"] ?? "") ?? 0 > 0)
        }

        @Test("an upload to an origin that stops reading is reset after stall-timeout and audited stalled")
        func stalledUpload() throws {
            let upstream = try NonReadingServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "server 127.0.0.1:\(upstream.port)", "stall-timeout 1s",
            ]))
            defer { relay.stop() }
            let socket = try TestSocket.connect(port: relay.proxyPort)
            let origin = "127.0.0.1:\(upstream.port)"
            try socket.write("POST http://\(origin)/ HTTP/1.1\r\nHost: \(origin)\r\nContent-Length: 1000000000\r\n\r\n")
            _ = fillUntilBlocked(socket)
            #expect(ProxyClient.closes(socket), "the connection is ended")
            let close = relay.audit.waitForEvents(where: "event = 'request-close'")
            #expect(close.first?["reason"] == "stalled", "audit:\n\(relay.audit.dump())")
        }

        @Test("a tunnel that only waits, with nothing queued, is not stalled")
        func quietTunnelIsNotStalled() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(echo.port)", "stall-timeout 500ms"]))
            defer { relay.stop() }
            let tunnel = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "127.0.0.1:\(echo.port)")
            sleep(3)
            try tunnel.write("still here")
            #expect(try tunnel.readExactly(10) == Array("still here".utf8))
        }
    }
}
