import Foundation
import Glibc
import RelayClient
import Synchronization
import Testing

/// `TCPClientStream` against real loopback servers: the bytes, the ends, the failures.
@Suite struct TCPClientStreamTests {
    static let quick = ClientTransportOptions(connectTimeout: .seconds(5), idleTimeout: .seconds(5))

    /// Echoes every byte until the client's FIN, then closes.
    static func echo(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            LoopbackServer.sendAll(fd, Array(buffer[0..<count]))
        }
        close(fd)
    }

    @Test(arguments: ["127.0.0.1", "localhost"])
    func echoesBytesAndEndsAfterHalfClose(host: String) async throws {
        let server = try LoopbackServer(Self.echo)
        let stream = try await TCPClientStream.connect(host: host, port: server.port, options: Self.quick)
        defer { stream.close() }
        try await stream.write(Array("ping".utf8))
        let echoed = try await readExactly(4) { try await stream.read(maxBytes: $0) }
        #expect(echoed == Array("ping".utf8))
        try await stream.shutdownWrite()
        #expect(try await stream.read(maxBytes: 100) == [], "the server closes after our FIN")
    }

    @Test(arguments: ["::1", "[::1]"])
    func connectsOverIPv6(host: String) async throws {
        let server = try LoopbackServer(ipv6: true, Self.echo)
        let stream = try await TCPClientStream.connect(host: host, port: server.port, options: Self.quick)
        defer { stream.close() }
        #expect(stream.remoteAddress.family == AF_INET6)
        try await stream.write([1, 2, 3])
        #expect(try await readExactly(3) { try await stream.read(maxBytes: $0) } == [1, 2, 3])
    }

    @Test func refusedPortIsConnectionRefused() async throws {
        let port = try LoopbackServer(connections: 0) { _ in }.port  // released at once: nothing listens there
        do {
            _ = try await TCPClientStream.connect(host: "127.0.0.1", port: port, options: Self.quick)
            Issue.record("connected to a closed port")
        } catch {
            #expect(error.code == .connectionRefused, "\(error)")
            #expect(error.errno == ECONNREFUSED)
        }
    }

    @Test func unknownNameIsHostNotFound() async throws {
        do {
            _ = try await TCPClientStream.connect(host: "no-such-host.invalid", port: 80, options: Self.quick)
            Issue.record("resolved an .invalid name")
        } catch {
            #expect(error.code == .hostNotFound, "\(error)")
        }
    }

    @Test func silentServerTimesOutTheRead() async throws {
        let server = try LoopbackServer { fd in
            _ = LoopbackServer.receiveAll(fd)
            close(fd)
        }
        let options = ClientTransportOptions(connectTimeout: .seconds(5), idleTimeout: .milliseconds(300))
        let stream = try await TCPClientStream.connect(host: "127.0.0.1", port: server.port, options: options)
        defer { stream.close() }
        do {
            _ = try await stream.read(maxBytes: 100)
            Issue.record("a silent server produced bytes")
        } catch {
            #expect(error.code == .timeout, "\(error)")
        }
    }

    @Test func resetMidReadIsConnectionReset() async throws {
        let server = try LoopbackServer { fd in
            LoopbackServer.sendAll(fd, Array("partial".utf8))
            usleep(100_000)
            LoopbackServer.reset(fd)
        }
        let stream = try await TCPClientStream.connect(host: "127.0.0.1", port: server.port, options: Self.quick)
        defer { stream.close() }
        var received: [UInt8] = []
        var failure: RelayClientError?
        for _ in 0..<10 {
            do {
                let chunk = try await stream.read(maxBytes: 100)
                if chunk.isEmpty { break }
                received += chunk
            } catch {
                failure = error
                break
            }
        }
        #expect(received == Array("partial".utf8))
        #expect(failure?.code == .connectionReset, "\(String(describing: failure))")
    }

    @Test func cancellingAPendingReadClosesTheStream() async throws {
        let server = try LoopbackServer { fd in
            _ = LoopbackServer.receiveAll(fd)
            close(fd)
        }
        let stream = try await TCPClientStream.connect(host: "127.0.0.1", port: server.port, options: Self.quick)
        let reader = Task { () async throws -> [UInt8] in try await stream.read(maxBytes: 10) }
        try await Task.sleep(for: .milliseconds(100))
        reader.cancel()
        let result = await reader.result
        if case .failure(let error) = result {
            #expect((error as? RelayClientError)?.code == .cancelled, "\(error)")
        } else {
            Issue.record("a cancelled read returned")
        }
        do {
            try await stream.write([1])
            Issue.record("wrote on a cancelled stream")
        } catch {
            #expect(error.code == .cancelled, "\(error)")
        }
    }

    @Test func closeFailsAPendingReadWithClosed() async throws {
        let server = try LoopbackServer { fd in
            _ = LoopbackServer.receiveAll(fd)
            close(fd)
        }
        let stream = try await TCPClientStream.connect(host: "127.0.0.1", port: server.port, options: Self.quick)
        let reader = Task { () async throws -> [UInt8] in try await stream.read(maxBytes: 10) }
        try await Task.sleep(for: .milliseconds(100))
        stream.close()
        stream.close()
        if case .failure(let error) = await reader.result {
            #expect((error as? RelayClientError)?.code == .closed, "\(error)")
        } else {
            Issue.record("a closed stream's read returned")
        }
    }

    @Test func serverHalfCloseLetsTheClientWriteOn() async throws {
        let received = Mutex<[UInt8]?>(nil)
        let server = try LoopbackServer { fd in
            LoopbackServer.sendAll(fd, Array("bye".utf8))
            shutdown(fd, Int32(SHUT_WR))
            let rest = LoopbackServer.receiveAll(fd)
            received.withLock { $0 = rest }
            close(fd)
        }
        let stream = try await TCPClientStream.connect(host: "127.0.0.1", port: server.port, options: Self.quick)
        defer { stream.close() }
        #expect(try await readExactly(3) { try await stream.read(maxBytes: $0) } == Array("bye".utf8))
        #expect(try await stream.read(maxBytes: 10) == [], "the server's FIN")
        try await stream.write(Array("still here".utf8))
        try await stream.shutdownWrite()
        for _ in 0..<600 where received.withLock({ $0 }) == nil {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(received.withLock { $0 } == Array("still here".utf8))
    }

    @Test func aMebibyteEachWayThroughASlowReader() async throws {
        let size = 1 << 20
        let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let server = try LoopbackServer { fd in
            // Slow: a pause after each chunk, so the client's write waits on the kernel.
            let got = LoopbackServer.receiveAll(fd, pause: 2_000)
            LoopbackServer.sendAll(fd, got)
            close(fd)
        }
        let stream = try await TCPClientStream.connect(host: "127.0.0.1", port: server.port, options: Self.quick)
        defer { stream.close() }
        try await stream.write(payload)
        try await stream.shutdownWrite()
        let back = try await readExactly(size + 1) { try await stream.read(maxBytes: min($0, 65_536)) }
        #expect(back.count == size)
        #expect(back == payload)
    }

    @Test func aWriteToAPeerThatNeverReadsWaitsThenTimesOut() async throws {
        let release = Release()
        defer { release.release() }
        let server = try LoopbackServer { fd in
            release.wait()
            close(fd)
        }
        let options = ClientTransportOptions(connectTimeout: .seconds(5), idleTimeout: .milliseconds(400))
        let stream = try await TCPClientStream.connect(host: "127.0.0.1", port: server.port, options: options)
        defer { stream.close() }
        // Far more than the socket buffers hold: the write can only end by the timeout, so it
        // never took more than the kernel accepted.
        do {
            try await stream.write([UInt8](repeating: 7, count: 64 << 20))
            Issue.record("64 MiB went to a peer that reads nothing")
        } catch {
            #expect(error.code == .timeout, "\(error)")
        }
    }

    @Test func concurrentReadsAreRefused() async throws {
        let server = try LoopbackServer { fd in
            _ = LoopbackServer.receiveAll(fd)
            close(fd)
        }
        let stream = try await TCPClientStream.connect(host: "127.0.0.1", port: server.port, options: Self.quick)
        defer { stream.close() }
        let first = Task { () async throws -> [UInt8] in try await stream.read(maxBytes: 10) }
        try await Task.sleep(for: .milliseconds(100))
        do {
            _ = try await stream.read(maxBytes: 10)
            Issue.record("a second read ran")
        } catch {
            #expect(error.code == .concurrentOperation, "\(error)")
        }
        first.cancel()
        _ = await first.result
    }
}
