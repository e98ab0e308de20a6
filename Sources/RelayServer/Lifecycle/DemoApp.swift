import Dispatch
import Glibc
import RelayIO

/// A tiny HTTP app server for `dynrelay demo`, so the first `curl` through a fresh relay has
/// a registered destination to reach. Blocking I/O on a background queue: it is a demo
/// prop, not part of the relay's data path.
public final class DemoApp: Sendable {
    public static let body = "hello from the dynrelay demo app\n"
    private let fd: Int32
    public let address: String

    /// Binds `ip:port` (loopback in the embedded default).
    public init(ip: String, port: UInt16) throws {
        guard let socketAddress = SocketAddress(ip: ip, port: port) else {
            throw IOError("demo app address", errno: EINVAL)
        }
        let listener = try TCPListener.bind(socketAddress)
        self.address = listener.localAddress.description
        self.fd = listener.detachFD()
    }

    public func start() {
        let fd = self.fd
        DispatchQueue.global().async {
            while true {
                let client = retryingInterruptions { accept(fd, nil, nil) }
                if client < 0 {
                    if errno == EAGAIN { usleep(1000); continue }
                    return
                }
                DispatchQueue.global().async { Self.serve(client) }
            }
        }
    }

    private static func serve(_ client: Int32) {
        defer { close(client) }
        // Blocking reads: the listener was nonblocking, accepted sockets here are made blocking.
        let flags = fcntl(client, F_GETFL)
        _ = fcntl(client, F_SETFL, flags & ~O_NONBLOCK)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while head.count < 65536 {
            let count = read(client, &buffer, buffer.count)
            if count <= 0 { return }
            head.append(contentsOf: buffer[..<count])
            if head.count >= 4, head.suffix(4).elementsEqual([13, 10, 13, 10]) { break }
        }
        let response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        _ = response.withCString { write(client, $0, strlen($0)) }
    }
}
