import KerberosTestSupport
import Foundation
import Glibc
import Synchronization

/// A loopback stand-in for a proxy that wants Negotiate: it answers every request with
/// `407` + `Proxy-Authenticate: Negotiate`, closes, and keeps the `Proxy-Authorization`
/// values it was sent, so a test can hand real curl's token to the acceptor.
final class NegotiateProxyStub: Sendable {
    let port: UInt16
    private let listener: Int32
    private let authorizations = Mutex<[String]>([])
    private let finished = DispatchSemaphore(value: 0)

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestKDCError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else {
            close(fd)
            throw TestKDCError("loopback listener: errno \(errno)")
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { [self] in serve() }
    }

    /// Every `Proxy-Authorization` value received so far, in order.
    var received: [String] { authorizations.withLock { $0 } }

    /// Stops accepting; the serving thread closes the socket itself, so no fd is closed
    /// while `accept` may still be using it.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        _ = finished.wait(timeout: .now() + 5)
    }

    private func serve() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                break
            }
            for line in readHead(client).split(separator: "\r\n") {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == "proxy-authorization" {
                    let value = parts[1].trimmingCharacters(in: .whitespaces)
                    authorizations.withLock { $0.append(value) }
                }
            }
            let reply = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Negotiate\r\n"
                + "Content-Length: 0\r\nConnection: close\r\n\r\n"
            _ = reply.utf8CString.withUnsafeBytes { send(client, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL)) }
            close(client)
        }
        close(listener)
        finished.signal()
    }

    /// The request head, up to 64 KiB: enough for any Negotiate token curl sends.
    private func readHead(_ fd: Int32) -> String {
        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while head.count < 65536 {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            head += chunk[0..<n]
            if String(decoding: head, as: UTF8.self).contains("\r\n\r\n") { break }
        }
        return String(decoding: head, as: UTF8.self)
    }
}
