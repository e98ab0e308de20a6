import Glibc
import RelayIO

/// Drives a `TLSConnection`'s non-blocking steps from the test thread: poll(2) on its
/// descriptor for what the step asked, until a deadline. Also the loopback sockets under it.
enum TLSTestDriver {
    /// Waits until `fd` is readable or writable; false at the deadline.
    static func poll(_ fd: Int32, write: Bool, until deadline: UInt64) -> Bool {
        let now = monotonicNanos()
        guard now < deadline else { return false }
        var entry = pollfd(fd: fd, events: Int16(write ? POLLOUT : POLLIN), revents: 0)
        let milliseconds = Int32(min((deadline - now) / 1_000_000 + 1, 60_000))
        return Glibc.poll(&entry, 1, milliseconds) > 0
    }

    static func deadline(_ timeout: Duration) -> UInt64 { monotonicNanos() + UInt64(timeout.nanoseconds) }

    /// Runs the handshake to its end; nil when the deadline passed first.
    static func handshake(_ connection: TLSConnection, within timeout: Duration = .seconds(10)) -> TLSHandshakeResult? {
        let end = deadline(timeout)
        while true {
            let result = connection.handshake()
            switch result {
            case .done, .failed: return result
            case .wantRead: if !poll(connection.fd, write: false, until: end) { return nil }
            case .wantWrite: if !poll(connection.fd, write: true, until: end) { return nil }
            }
        }
    }

    /// Writes all of `bytes`; false on failure or at the deadline.
    static func writeAll(_ connection: TLSConnection, _ bytes: [UInt8], within timeout: Duration = .seconds(10)) -> Bool {
        let end = deadline(timeout)
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { connection.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            switch result {
            case .wrote(let count): offset += count
            case .wantRead: if !poll(connection.fd, write: false, until: end) { return false }
            case .wantWrite: if !poll(connection.fd, write: true, until: end) { return false }
            case .failed: return false
            }
        }
        return true
    }

    /// Reads until `count` bytes came, the stream ended or failed, or the deadline: the bytes
    /// and the result that stopped the reading (nil when it was the count or the deadline).
    static func read(_ connection: TLSConnection, count: Int = .max,
                     within timeout: Duration = .seconds(10)) -> (bytes: [UInt8], end: TLSReadResult?) {
        let end = deadline(timeout)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while received.count < count {
            let result = buffer.withUnsafeMutableBytes { connection.read(into: $0) }
            switch result {
            case .bytes(let got): received += buffer[..<got]
            case .wantRead: if !poll(connection.fd, write: false, until: end) { return (received, nil) }
            case .wantWrite: if !poll(connection.fd, write: true, until: end) { return (received, nil) }
            case .closed, .eof, .failed: return (received, result)
            }
        }
        return (received, nil)
    }

    /// A loopback listener on an ephemeral port.
    static func listen() throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw IOError("socket", errno: errno) }
        let any = SocketAddress(ip: "127.0.0.1", port: 0)!
        guard any.withSockAddr({ bind(fd, $0, $1) }) == 0, Glibc.listen(fd, 8) == 0 else {
            let code = errno
            close(fd)
            throw IOError("bind", errno: code)
        }
        return (fd, Peer.localPort(fd))
    }

    /// The next connection on `listener`, non-blocking; nil at the deadline.
    static func accept(_ listener: Int32, within timeout: Duration = .seconds(10)) -> Int32? {
        guard poll(listener, write: false, until: deadline(timeout)) else { return nil }
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { return nil }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// A non-blocking socket connected to 127.0.0.1:`port`.
    static func connect(port: UInt16) throws -> Int32 {
        let fd = try Peer.connect(to: SocketAddress(ip: "127.0.0.1", port: port)!).get()
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }
}

extension TLSHandshakeResult {
    var failureKind: TLSFailure.Kind? {
        if case .failed(let failure) = self { failure.kind } else { nil }
    }
}

/// The wire codes of a set written the way the configuration does (`1.0`…`1.3`).
func protocols(_ numbers: [String]) -> TLSProtocols {
    TLSProtocols(wire: numbers.compactMap { ["1.0": 0x0301, "1.1": 0x0302, "1.2": 0x0303, "1.3": 0x0304][$0] })
}

/// The `openssl` option offering only `version`, and the cipher list a legacy version needs
/// under Debian's security level 2.
func peerVersionOptions(_ version: String) -> [String] {
    switch version {
    case "1.0": ["-tls1", "-cipher", "DEFAULT@SECLEVEL=0"]
    case "1.1": ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"]
    case "1.2": ["-tls1_2"]
    default: ["-tls1_3"]
    }
}

/// `s_client` printing only what it receives, and ending (close_notify) when its stdin closes.
let quiet = ["-quiet", "-no_ign_eof"]
