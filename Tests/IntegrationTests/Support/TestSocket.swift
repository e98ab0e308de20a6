import Glibc

/// A failed socket call in a test peer, with the errno that explains it.
struct SocketError: Error, CustomStringConvertible {
    let operation: String
    let code: Int32

    init(_ operation: String, _ code: Int32 = errno) {
        self.operation = operation
        self.code = code
    }

    /// The peer reset the connection (RST), as opposed to any other failure.
    var isReset: Bool { code == ECONNRESET || code == EPIPE }
    /// SO_RCVTIMEO/SO_SNDTIMEO fired: the other side went silent.
    var isTimeout: Bool { code == EAGAIN || code == EWOULDBLOCK }

    var description: String { "\(operation): \(String(cString: strerror(code))) (errno \(code))" }
}

/// A blocking loopback TCP socket for test peers.
///
/// Every socket gets receive and send timeouts, so no test can hang on a relay that stops
/// answering: a read that waits longer than `timeoutSeconds` throws instead.
/// Not thread-safe; one thread owns it (a server connection thread or the test body).
final class TestSocket: @unchecked Sendable {
    private(set) var fd: Int32
    /// Bytes read past what the last `readHead`/`readLine` consumed.
    private var pending: [UInt8] = []

    /// Default I/O timeout for test sockets.
    static let defaultTimeoutSeconds = 20

    init(fd: Int32, timeoutSeconds: Int = TestSocket.defaultTimeoutSeconds) {
        self.fd = fd
        setTimeout(seconds: timeoutSeconds)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    /// Connects to `host`:`port` (a loopback address), from `source` (another loopback
    /// address, so the relay sees another client) when given.
    static func connect(port: UInt16, host: String = "127.0.0.1", from source: String? = nil,
                        timeoutSeconds: Int = TestSocket.defaultTimeoutSeconds) throws -> TestSocket {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket") }
        let socket = TestSocket(fd: fd, timeoutSeconds: timeoutSeconds)
        if let source {
            var local = loopback(port: 0)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { throw SocketError("bind \(source)") }
        }
        var address = loopback(port: port)
        address.sin_addr.s_addr = inet_addr(host)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else { throw SocketError("connect \(host):\(port)") }
        return socket
    }

    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    func setTimeout(seconds: Int) {
        var tv = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    // MARK: writing

    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write(raw: $0) }
    }

    func write(_ text: String) throws {
        try write(Array(text.utf8))
    }

    func write(raw: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < raw.count {
            let n = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            if n < 0 {
                if errno == EINTR { continue }
                throw SocketError("send")
            }
            offset += n
        }
    }

    /// Sends FIN: the peer sees EOF while we can still read.
    func shutdownWrite() {
        Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes with RST instead of FIN (SO_LINGER 0): the "reset mid-stream" peer.
    func resetAndClose() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    // MARK: reading

    /// Up to `max` bytes; empty at EOF. Serves buffered bytes first.
    func read(max: Int = 65536) throws -> [UInt8] {
        if !pending.isEmpty {
            let count = min(max, pending.count)
            let out = Array(pending[0..<count])
            pending.removeFirst(count)
            return out
        }
        var buffer = [UInt8](repeating: 0, count: max)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, max, 0) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SocketError("recv")
            }
            buffer.removeLast(max - n)
            return buffer
        }
    }

    /// Everything up to EOF, at most `limit` bytes (a runaway peer fails the test rather
    /// than eating memory).
    func readToEOF(limit: Int = 64 * 1024 * 1024) throws -> [UInt8] {
        var out: [UInt8] = []
        while true {
            let chunk = try read()
            if chunk.isEmpty { return out }
            out += chunk
            if out.count > limit { throw SocketError("readToEOF: more than \(limit) bytes", EMSGSIZE) }
        }
    }

    /// Feeds everything up to EOF into `hasher` without keeping it; returns the byte count.
    func drainToEOF(into hasher: SHA256Hasher) throws -> Int {
        var total = 0
        while true {
            let chunk = try read()
            if chunk.isEmpty { return total }
            hasher.update(chunk)
            total += chunk.count
        }
    }

    /// Exactly `count` bytes, or throws at EOF.
    func readExactly(_ count: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            let chunk = try read(max: min(65536, count - out.count))
            if chunk.isEmpty { throw SocketError("readExactly: EOF after \(out.count) of \(count) bytes", ECONNABORTED) }
            out += chunk
        }
        return out
    }

    /// Reads up to and including the first CRLFCRLF (at most `limit` bytes); later bytes stay
    /// buffered for `read`. Returns nil at EOF before a full head.
    func readHead(limit: Int = 256 * 1024) throws -> [UInt8]? {
        var buffer = pending
        pending = []
        var searchFrom = 0
        while true {
            if let end = Self.find([13, 10, 13, 10], in: buffer, from: searchFrom) {
                pending = Array(buffer[(end + 4)...])
                return Array(buffer[..<(end + 4)])
            }
            searchFrom = max(0, buffer.count - 3)
            if buffer.count > limit { throw SocketError("readHead: no end of head within \(limit) bytes", EMSGSIZE) }
            let chunk = try read()
            if chunk.isEmpty {
                pending = buffer
                return nil
            }
            buffer += chunk
        }
    }

    /// One CRLF-terminated line without its CRLF (chunked decoding), nil at EOF.
    func readLine(limit: Int = 64 * 1024) throws -> [UInt8]? {
        var buffer = pending
        pending = []
        var searchFrom = 0
        while true {
            if let end = Self.find([13, 10], in: buffer, from: searchFrom) {
                pending = Array(buffer[(end + 2)...])
                return Array(buffer[..<end])
            }
            searchFrom = max(0, buffer.count - 1)
            if buffer.count > limit { throw SocketError("readLine: no CRLF within \(limit) bytes", EMSGSIZE) }
            let chunk = try read()
            if chunk.isEmpty {
                pending = buffer
                return nil
            }
            buffer += chunk
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int = 0) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var i = from
        while i + needle.count <= haystack.count {
            if haystack[i] == needle[0] && Array(haystack[i..<(i + needle.count)]) == needle { return i }
            i += 1
        }
        return nil
    }
}

/// A listening socket on 127.0.0.1 with an ephemeral port.
final class TestListener: @unchecked Sendable {
    let fd: Int32
    let port: UInt16

    /// `backlog` 0 makes a port that stops completing handshakes once one connection is
    /// queued: the "blackhole" upstream for connect-timeout tests.
    init(backlog: Int32 = 128) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = TestSocket.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, backlog) == 0 else {
            let error = SocketError("bind/listen")
            Glibc.close(fd)
            throw error
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        self.port = UInt16(bigEndian: actual.sin_port)
    }

    /// Blocks for the next connection; nil once the listener is shut down.
    func accept() -> TestSocket? {
        while true {
            let client = Glibc.accept(fd, nil, nil)
            if client >= 0 {
                // Children the tests spawn (the relay, curl) must not inherit upstream sockets.
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                return TestSocket(fd: client)
            }
            if errno == EINTR || errno == ECONNABORTED { continue }
            return nil
        }
    }

    /// Wakes a blocked `accept` (shutdown on a listening socket makes it return EINVAL).
    func stop() {
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    deinit {
        Glibc.close(fd)
    }

    /// Starts a non-blocking connect that is never completed or read: it occupies the
    /// accept queue of a `backlog: 0` listener. The caller keeps the descriptor open.
    func occupyAcceptQueue(connections: Int = 3) -> [TestSocket] {
        (0..<connections).compactMap { _ in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return nil }
            var address = TestSocket.loopback(port: port)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            return TestSocket(fd: fd)
        }
    }

    /// A loopback port nothing listens on: bound (so the kernel picked it) then closed.
    /// Another process could take it in between, which on a test box is vanishingly rare.
    static func refusedPort() throws -> UInt16 {
        let listener = try TestListener()
        return listener.port
    }
}

/// A port whose accept queue is full: the kernel drops further SYNs, so a connect to it
/// neither completes nor is refused, and only the connector's timer ends it.
final class BlackholeListener: @unchecked Sendable {
    private let listener: TestListener
    private let fillers: [TestSocket]
    var port: UInt16 { listener.port }

    init() throws {
        listener = try TestListener(backlog: 0)
        fillers = listener.occupyAcceptQueue()
        usleep(100_000)  // the fillers' handshakes complete and fill the queue
    }

    deinit {
        fillers.forEach { $0.close() }
    }
}
