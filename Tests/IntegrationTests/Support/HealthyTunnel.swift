import Foundation

/// A CONNECT tunnel to an echo server, opened before some bad input is thrown at the
/// relay and checked after it: the bad input must not affect other connections.
final class HealthyTunnel: @unchecked Sendable {
    let echo: EchoServer
    let socket: TestSocket
    private var round = 0

    init(relay: RelayProcess, echo: EchoServer) throws {
        self.echo = echo
        socket = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "127.0.0.1:\(echo.port)")
        try roundTrip(count: 4096)
    }

    /// Sends `count` pattern bytes and reads the echo; throws unless it is byte-exact.
    func roundTrip(count: Int = 1 << 20) throws {
        round += 1
        let payload = PatternBytes.make(count: count, seed: 1000 + UInt64(round))
        // Write and read concurrently: 1 MiB exceeds what socket buffers hold in one direction.
        let writeError = LockedBox<Error?>(nil)
        let done = DispatchSemaphore(value: 0)
        let socket = self.socket
        Thread.detachNewThread {
            do { try socket.write(payload) } catch { writeError.set(error) }
            done.signal()
        }
        let echoed = try socket.readExactly(count)
        _ = done.wait(timeout: .now() + .seconds(TestSocket.defaultTimeoutSeconds))
        if let error = writeError.get() { throw error }
        guard SHA256Hasher.hex(echoed) == SHA256Hasher.hex(payload) else {
            throw HarnessError("healthy tunnel: echo of \(count) bytes is not byte-exact")
        }
    }
}

/// A value shared between a helper thread and the test body.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.lock(); defer { lock.unlock() }; return value }
    func set(_ newValue: Value) { lock.lock(); value = newValue; lock.unlock() }
}
