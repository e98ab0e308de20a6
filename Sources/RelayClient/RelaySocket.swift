import Glibc
import RelayCore
import RelayIO

/// A GDSocket-like stream to an app server, tunnelled through a relay with `CONNECT`.
///
/// Blocking and deliberately small: open, read, write, half-close, close. Every wait is
/// bounded by the timeout given at open.
public final class RelaySocket {
    private var fd: Int32
    private var pending: [UInt8]
    private let timeoutMs: Int32

    /// Connects to the relay at `proxyIP:proxyPort` and opens a tunnel to `host:port`.
    /// Throws `ProxyConnectHandshake.Failure` when the relay refuses (status and reason code)
    /// or does not answer like an HTTP proxy, `IOError` when it cannot be reached or a wait
    /// outlasts `timeout` (errno `ETIMEDOUT`).
    public init(proxyIP: String, proxyPort: UInt16, host: String, port: UInt16,
                extraHeaders: [(name: String, value: String)] = [], timeout: Duration = .seconds(10)) throws {
        guard let proxy = SocketAddress(ip: proxyIP, port: proxyPort) else {
            throw IOError("relay address \(proxyIP)", errno: EINVAL)
        }
        self.timeoutMs = Int32(clamping: timeout.monotonicNanos / 1_000_000)
        self.fd = try Self.connect(to: proxy, timeoutMs: timeoutMs)
        self.pending = []
        var handshake = ProxyConnectHandshake(host: host, port: port, extraHeaders: extraHeaders)
        do {
            try writeAll(handshake.start())
            while true {
                let bytes = try readSome(max: 16 * 1024)
                if bytes.isEmpty { throw handshake.receiveEOF() }
                switch handshake.receive(bytes) {
                case .needMore: continue
                case .established(let leftover):
                    pending = leftover
                    return
                case .failed(let failure): throw failure
                }
            }
        } catch {
            Glibc.close(fd)
            fd = -1
            throw error
        }
    }

    deinit {
        close()
    }

    /// Writes every byte (blocking up to the timeout per wait).
    public func write(_ bytes: [UInt8]) throws {
        try writeAll(bytes)
    }

    /// Up to `max` bytes; empty at end of stream.
    public func read(max: Int = 64 * 1024) throws -> [UInt8] {
        if !pending.isEmpty {
            let bytes = Array(pending.prefix(max))
            pending.removeFirst(bytes.count)
            return bytes
        }
        return try readSome(max: max)
    }

    /// Half-close: the app server sees end of stream, replies still arrive.
    public func shutdownWrite() {
        if fd >= 0 { _ = shutdown(fd, Int32(SHUT_WR)) }
    }

    /// Closes both directions; later reads and writes throw `EBADF`.
    public func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    /// A non-blocking socket whose connect is bounded by the timeout like every other wait:
    /// a relay that drops SYNs would otherwise hold `init` for the kernel's SYN retries
    /// (about two minutes). The socket stays non-blocking, so no `send` can block past a
    /// wait either.
    private static func connect(to address: SocketAddress, timeoutMs: Int32) throws -> Int32 {
        let flags = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let fd = socket(address.family, flags, 0)
        guard fd >= 0 else { throw IOError("socket", errno: errno) }
        do {
            guard address.withSockAddr({ Glibc.connect(fd, $0, $1) }) != 0 else { return fd }
            guard errno == EINPROGRESS else { throw IOError("connect \(address)", errno: errno) }
            try wait(fd, for: Int16(POLLOUT), timeoutMs: timeoutMs, operation: "connect \(address)")
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length) == 0 else {
                throw IOError("connect \(address)", errno: errno)
            }
            if failure != 0 { throw IOError("connect \(address)", errno: failure) }
            return fd
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    private static func wait(_ fd: Int32, for events: Int16, timeoutMs: Int32, operation: String) throws {
        var descriptor = pollfd(fd: fd, events: events, revents: 0)
        let ready = retryingInterruptions { poll(&descriptor, 1, timeoutMs) }
        if ready > 0 { return }
        if ready == 0 { throw IOError(operation, errno: ETIMEDOUT) }
        throw IOError(operation, errno: errno)
    }

    private func wait(for events: Int16, operation: String) throws {
        // poll(2) skips a negative descriptor and would report a timeout after the full wait.
        guard fd >= 0 else { throw IOError(operation, errno: EBADF) }
        try Self.wait(fd, for: events, timeoutMs: timeoutMs, operation: operation)
    }

    private func writeAll(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            try wait(for: Int16(POLLOUT), operation: "send")
            let result = try systemCall("send") {
                bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            if case .processed(let written) = result { offset += written }
        }
    }

    private func readSome(max: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max)
        while true {
            try wait(for: Int16(POLLIN), operation: "recv")
            let result = try systemCall("recv") { buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) } }
            if case .processed(let count) = result { return Array(buffer[..<count]) }
        }
    }
}
