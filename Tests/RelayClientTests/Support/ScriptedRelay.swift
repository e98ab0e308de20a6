import Foundation
import Glibc
import Synchronization

/// A stand-in relay on loopback that accepts one connection, reads the client's request
/// head, and then plays a script: whatever a real relay, a broken one or a hostile one
/// might do. Its socket has a receive timeout, so a script never outlives a silent client
/// by more than `ScriptedRelay.ioTimeoutSeconds`.
final class ScriptedRelay: @unchecked Sendable {
    enum Step: Sendable {
        /// Sends these bytes in one `send` (one segment on loopback).
        case send([UInt8])
        /// Sends this text, as `send`.
        case sendText(String)
        /// Waits this long before the next step.
        case pause(milliseconds: Int)
        /// Echoes every byte until the client's FIN.
        case echoUntilEOF
        /// Reads until the client's FIN, keeping what arrived (`received`).
        case readUntilEOF
        /// Keeps the connection open without reading until `stop()` (or 30 s).
        case hold
        /// Reads another request head on the same connection (a `407`'s answer).
        case readHead
    }

    static let ioTimeoutSeconds = 10

    let port: UInt16
    private let listenFD: Int32
    private let state = Mutex(State())
    private let finished = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    private struct State {
        var head: [UInt8] = []
        var laterHeads: [String] = []
        var received: [UInt8] = []
    }

    /// Listens on `127.0.0.1` (or `::1` with `ipv6`) and plays `script` on the first
    /// connection; the connection is closed (FIN) after the last step.
    init(ipv6: Bool = false, readsHead: Bool = true, _ script: [Step]) throws {
        (listenFD, port) = try Self.listen(ipv6: ipv6)
        let listenFD = self.listenFD
        Thread.detachNewThread { [self] in
            defer { finished.signal() }
            let fd = accept(listenFD, nil, nil)
            guard fd >= 0 else { return }
            defer { Glibc.close(fd) }
            var timeout = timeval(tv_sec: Self.ioTimeoutSeconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            if readsHead {
                let head = Self.readHead(fd)
                state.withLock { $0.head = head }
            }
            for step in script {
                play(step, on: fd)
            }
        }
    }

    deinit {
        stop()
        Glibc.close(listenFD)
    }

    /// The request head the client sent (through its blank line), once `waitUntilFinished`
    /// returned.
    var requestHead: String { String(decoding: state.withLock { $0.head }, as: UTF8.self) }

    /// The heads `readHead` steps read, in order.
    var laterHeads: [String] { state.withLock { $0.laterHeads } }

    /// What `readUntilEOF` or `echoUntilEOF` received.
    var received: [UInt8] { state.withLock { $0.received } }

    /// Ends a `hold` (and unblocks a pending accept): the connection closes.
    func stop() {
        released.signal()
        shutdown(listenFD, Int32(SHUT_RDWR))
    }

    /// Waits, bounded, for the script to end; whether it did.
    @discardableResult
    func waitUntilFinished(seconds: Int = 10) -> Bool {
        guard finished.wait(timeout: .now() + .seconds(seconds)) == .success else { return false }
        finished.signal()
        return true
    }

    private func play(_ step: Step, on fd: Int32) {
        switch step {
        case .send(let bytes):
            Self.sendAll(fd, bytes)
        case .sendText(let text):
            Self.sendAll(fd, Array(text.utf8))
        case .pause(let milliseconds):
            usleep(UInt32(milliseconds) * 1000)
        case .echoUntilEOF:
            while let chunk = Self.receive(fd), !chunk.isEmpty {
                state.withLock { $0.received += chunk }
                Self.sendAll(fd, chunk)
            }
        case .readUntilEOF:
            while let chunk = Self.receive(fd), !chunk.isEmpty {
                state.withLock { $0.received += chunk }
            }
        case .hold:
            _ = released.wait(timeout: .now() + 30)
            released.signal()
        case .readHead:
            let head = String(decoding: Self.readHead(fd), as: UTF8.self)
            state.withLock { $0.laterHeads.append(head) }
        }
    }

    private static func listen(ipv6: Bool) throws -> (Int32, UInt16) {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var bound: Int32
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr = in6addr_loopback
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard bound == 0, Glibc.listen(fd, 8) == 0 else {
            let error = POSIXError(.init(rawValue: errno) ?? .EIO)
            Glibc.close(fd)
            throw error
        }
        return (fd, localPort(fd))
    }

    /// The port a socket is bound to, IPv4 or IPv6 (the port sits at the same offset in both).
    static func localPort(_ fd: Int32) -> UInt16 {
        var storage = sockaddr_in6()
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: storage.sin6_port)
    }

    /// Byte by byte up to the blank line, so nothing after the head is taken from the stream.
    private static func readHead(_ fd: Int32) -> [UInt8] {
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.ends(with: [13, 10, 13, 10]), recv(fd, &byte, 1, 0) == 1 {
            head.append(byte)
        }
        return head
    }

    /// Nil on error or timeout, empty at EOF.
    private static func receive(_ fd: Int32) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return count < 0 ? nil : Array(buffer[..<count])
    }

    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return }
            offset += sent
        }
    }
}

/// A loopback port whose accept queue is full: the kernel drops further SYNs, so a connect
/// neither completes nor is refused until the client gives up.
final class BlackholePort: @unchecked Sendable {
    let port: UInt16
    private let listenFD: Int32
    private var fillers: [Int32] = []

    init() throws {
        let listenFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.listenFD = listenFD
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listenFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // Backlog 0 holds one completed handshake; the fillers take it and nobody accepts.
        guard bound == 0, listen(listenFD, 0) == 0 else {
            Glibc.close(listenFD)
            throw POSIXError(.EADDRINUSE)
        }
        port = ScriptedRelay.localPort(listenFD)
        address.sin_port = port.bigEndian
        for _ in 0..<3 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            fillers.append(fd)
        }
        usleep(100_000)  // the fillers' handshakes complete and fill the queue
    }

    deinit {
        fillers.forEach { Glibc.close($0) }
        Glibc.close(listenFD)
    }
}

extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
