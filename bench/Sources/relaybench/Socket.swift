#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 loopback address and port.
struct Endpoint: Sendable, CustomStringConvertible {
    let host: String
    let port: UInt16
    var description: String { "\(host):\(port)" }

    func sockaddr() throws -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw SocketError(operation: "inet_pton \(host)", code: EINVAL)
        }
        return address
    }
}

/// How a client reaches the upstream: which socket to dial, and, for a CONNECT proxy,
/// the authority to ask it for.
struct Route: Sendable {
    let dial: Endpoint
    let connectTarget: Endpoint?
}

/// A failed system call with its errno.
struct SocketError: Error, CustomStringConvertible {
    let operation: String
    let code: Int32
    init(operation: String, code: Int32 = errno) {
        self.operation = operation
        self.code = code
    }
    var description: String { "\(operation): \(String(cString: strerror(code)))" }
}

/// Blocking client-side socket helpers; every measurement thread owns its descriptors.
enum Socket {
    /// Connects a blocking TCP socket with send/receive timeouts so a stuck peer fails the
    /// measurement instead of hanging bench/run.
    static func connect(to endpoint: Endpoint, timeoutSeconds: Int = 10) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(operation: "socket") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = try endpoint.sockaddr()
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 {
            let code = errno
            close(fd)
            throw SocketError(operation: "connect \(endpoint)", code: code)
        }
        return fd
    }

    static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < buffer.count {
            let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw SocketError(operation: "write")
            }
            offset += n
        }
    }

    static func readExact(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws {
        var offset = 0
        while offset < buffer.count {
            let n = read(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw SocketError(operation: "read")
            }
            if n == 0 { throw SocketError(operation: "read: unexpected EOF", code: ECONNRESET) }
            offset += n
        }
    }

    /// Opens a tunnel along `route`: connect, and for a CONNECT proxy send the request and
    /// require a 2xx head. The upstream never speaks first, so nothing follows the head.
    static func openTunnel(_ route: Route) throws -> Int32 {
        let fd = try connect(to: route.dial)
        guard let target = route.connectTarget else { return fd }
        do {
            try connectHandshake(target, write: { try writeAll(fd, $0) }, readSome: { buffer in
                while true {
                    let n = read(fd, buffer.baseAddress!, buffer.count)
                    if n >= 0 { return n }
                    if errno != EINTR { throw SocketError(operation: "read CONNECT response") }
                }
            })
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// The same CONNECT exchange over a stream that may already run TLS (an HTTPS proxy).
    static func sendConnect(_ target: Endpoint, over stream: ClientStream) throws {
        try connectHandshake(target, write: { try stream.writeAll($0) }, readSome: { try stream.readSome($0) })
    }

    private static func connectHandshake(_ target: Endpoint, write: (UnsafeRawBufferPointer) throws -> Void,
                                         readSome: (UnsafeMutableRawBufferPointer) throws -> Int) throws {
        let request = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n"
        try Array(request.utf8).withUnsafeBytes { try write($0) }
        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while !head.endsWithHeaderTerminator {
            let n = try chunk.withUnsafeMutableBytes { try readSome($0) }
            guard n > 0 else { throw SocketError(operation: "read CONNECT response", code: ECONNRESET) }
            head.append(contentsOf: chunk[0..<n])
            guard head.count < 16384 else { throw SocketError(operation: "CONNECT response head too long", code: EPROTO) }
        }
        let statusLine = String(decoding: head.prefix(while: { $0 != 13 }), as: UTF8.self)
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[1].hasPrefix("2") else {
            throw SocketError(operation: "CONNECT refused: \(statusLine)", code: EPROTO)
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate var endsWithHeaderTerminator: Bool {
        count >= 4 && self[count - 4] == 13 && self[count - 3] == 10 && self[count - 2] == 13 && self[count - 1] == 10
    }
}

/// Monotonic time in nanoseconds.
func monotonicNanos() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Prints one machine-readable result line and flushes it at once.
func report(_ kind: String, _ label: String, _ fields: [(String, String)]) {
    let body = fields.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
    // write(2) directly: unbuffered, and Glibc's `stdout` global is not concurrency-safe in Swift 6.
    let line = Array("result kind=\(kind) label=\(label) \(body)\n".utf8)
    _ = line.withUnsafeBytes { write(1, $0.baseAddress!, $0.count) }
}

/// Fixed-point formatting without Foundation.
func fixed(_ value: Double, _ decimals: Int = 1) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    var text = String(rounded)
    if let dot = text.firstIndex(of: ".") {
        let fraction = text[text.index(after: dot)...]
        if fraction.count < decimals { text += String(repeating: "0", count: decimals - fraction.count) }
        if decimals == 0 { text = String(text[..<dot]) }
    }
    return text
}

/// Writes a line to stderr (Glibc's `stderr` global is not concurrency-safe in Swift 6).
func printError(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress!, $0.count) }
}
