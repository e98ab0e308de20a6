import Foundation
import Glibc
import Synchronization

/// An in-process upstream on 127.0.0.1:ephemeral: one thread accepts, one thread per
/// connection runs `handle`. Every socket has I/O timeouts, so a handler cannot outlive a
/// silent relay by more than `TestSocket.defaultTimeoutSeconds`.
class UpstreamServer: @unchecked Sendable {
    let listener: TestListener
    var port: UInt16 { listener.port }
    private let connectionCount = Mutex(0)

    /// Connections accepted so far.
    var connections: Int { connectionCount.withLock { $0 } }

    init() throws {
        listener = try TestListener()
    }

    /// Starts accepting; subclasses call this at the end of their init.
    func start() {
        let listener = self.listener
        Thread.detachNewThread { [weak self] in
            while let socket = listener.accept() {
                guard let self else { return }
                let index = self.connectionCount.withLock { count -> Int in
                    count += 1
                    return count
                }
                Thread.detachNewThread { self.handle(socket, connection: index) }
            }
        }
    }

    /// Serves one connection; runs on its own thread.
    func handle(_ socket: TestSocket, connection: Int) {}

    func stop() {
        listener.stop()
    }

    deinit {
        listener.stop()
    }
}

/// Echoes every byte back; answers the client's FIN with its own.
final class EchoServer: UpstreamServer, @unchecked Sendable {
    override init() throws {
        try super.init()
        start()
    }

    override func handle(_ socket: TestSocket, connection: Int) {
        while let chunk = try? socket.read(), !chunk.isEmpty {
            if (try? socket.write(chunk)) == nil { break }
        }
        socket.shutdownWrite()
    }
}

/// What a `DuplexServer` connection received.
struct ReceivedStream: Sendable, Equatable {
    var count: Int
    var sha256: String
    /// True when the client's FIN was seen (not a reset, not a timeout).
    var sawEOF: Bool
}

/// Full duplex with half-close: sends `downBeforeEOF` at once (concurrently with reading),
/// reads the client's stream to EOF, then sends `downAfterEOF`, then FIN.
/// With `downAfterEOF` empty it is the "send N bytes then FIN" server.
final class DuplexServer: UpstreamServer, @unchecked Sendable {
    let downBeforeEOF: [UInt8]
    let downAfterEOF: [UInt8]
    private let received = Mutex<[ReceivedStream]>([])

    init(downBeforeEOF: [UInt8], downAfterEOF: [UInt8] = []) throws {
        self.downBeforeEOF = downBeforeEOF
        self.downAfterEOF = downAfterEOF
        try super.init()
        start()
    }

    /// Streams received so far, in completion order.
    var streams: [ReceivedStream] { received.withLock { $0 } }

    override func handle(_ socket: TestSocket, connection: Int) {
        let firstPartSent = DispatchSemaphore(value: 0)
        let before = downBeforeEOF
        Thread.detachNewThread {
            _ = try? socket.write(before)
            firstPartSent.signal()
        }
        let hasher = SHA256Hasher()
        var count = 0
        var sawEOF = false
        do {
            count = try socket.drainToEOF(into: hasher)
            sawEOF = true
        } catch {}
        _ = firstPartSent.wait(timeout: .now() + .seconds(TestSocket.defaultTimeoutSeconds))
        received.withLock { $0.append(ReceivedStream(count: count, sha256: hasher.finalHex(), sawEOF: sawEOF)) }
        if sawEOF { _ = try? socket.write(downAfterEOF) }
        socket.shutdownWrite()
        // Hold the socket until the relay closes its side, so FIN is not turned into RST.
        _ = try? socket.read()
    }
}

/// Reads the client's stream to its FIN, then sends nothing and keeps its side open (the
/// test holds it): the upstream of a half-closed tunnel that stays quiet.
final class QuietAfterEOFServer: UpstreamServer, @unchecked Sendable {
    private let held = Mutex<[TestSocket]>([])
    /// The connections whose client FIN arrived, still open on this side.
    var heldAfterEOF: [TestSocket] { held.withLock { $0 } }

    override init() throws {
        try super.init()
        start()
    }

    override func handle(_ socket: TestSocket, connection: Int) {
        guard (try? socket.drainToEOF(into: SHA256Hasher())) != nil else { return }
        held.withLock { $0.append(socket) }
    }
}

/// Sends `reply` and closes at once without reading: a late byte from the client then
/// meets a closed socket, which answers it with a reset.
final class ReplyThenCloseServer: UpstreamServer, @unchecked Sendable {
    let reply: [UInt8]

    init(reply: [UInt8]) throws {
        self.reply = reply
        try super.init()
        start()
    }

    override func handle(_ socket: TestSocket, connection: Int) {
        _ = try? socket.write(reply)
        socket.close()
    }
}

/// Reads each request head (and no body) and answers it with `reply`, byte for byte; with
/// `closeAfter` it then closes, ending a body framed by the close. Records every head.
final class CannedHTTPOrigin: UpstreamServer, @unchecked Sendable {
    let reply: [UInt8]
    let closeAfter: Bool
    private let seenHeads = Mutex<[[UInt8]]>([])

    init(reply: String, closeAfter: Bool = false) throws {
        self.reply = Array(reply.utf8)
        self.closeAfter = closeAfter
        try super.init()
        start()
    }

    /// The request heads received so far, as bytes.
    var heads: [[UInt8]] { seenHeads.withLock { $0 } }

    override func handle(_ socket: TestSocket, connection: Int) {
        while let head = try? socket.readHead() {
            seenHeads.withLock { $0.append(head) }
            guard (try? socket.write(reply)) != nil else { return }
            if closeAfter {
                socket.close()
                return
            }
        }
    }
}

/// Sends `prefix`, waits for one byte from the client (so the tunnel is surely carrying
/// data both ways), then resets the connection (SO_LINGER 0).
final class ResetServer: UpstreamServer, @unchecked Sendable {
    let prefix: [UInt8]

    init(prefix: [UInt8]) throws {
        self.prefix = prefix
        try super.init()
        start()
    }

    override func handle(_ socket: TestSocket, connection: Int) {
        _ = try? socket.write(prefix)
        _ = try? socket.read(max: 1)
        socket.resetAndClose()
    }
}

/// One request as the origin saw it.
struct SeenRequest: Sendable {
    var connection: Int
    var indexOnConnection: Int
    var requestLine: String
    var headers: [(name: String, value: String)]
    var bodyCount: Int
    var bodySHA256: String
    var bodyError: String?

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// An HTTP/1.1 origin with keep-alive that reports what it saw in its response headers
/// (`X-Seen-*`), so a test can assert what the relay forwarded.
///
/// Paths: `/bytes/N` answers N pattern bytes (seed `responseSeed`) with Content-Length;
/// `/chunked/N` the same bytes chunked; anything else `hello from origin\n`.
/// A request header `X-Origin-Stall-Ms: N` makes it wait N ms before reading the body,
/// so a relay that buffers instead of applying backpressure would have to hold it all.
final class HTTPOrigin: UpstreamServer, @unchecked Sendable {
    static let responseSeed: UInt64 = 7
    static let helloBody = Array("hello from origin\n".utf8)
    private let seenRequests = Mutex<[SeenRequest]>([])

    override init() throws {
        try super.init()
        start()
    }

    var requests: [SeenRequest] { seenRequests.withLock { $0 } }

    override func handle(_ socket: TestSocket, connection: Int) {
        var index = 0
        while true {
            guard let headBytes = try? socket.readHead(), let head = String(bytes: headBytes, encoding: .utf8) else { return }
            index += 1
            let lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
            guard let requestLine = lines.first else { return }
            var headers: [(name: String, value: String)] = []
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
            var seen = SeenRequest(connection: connection, indexOnConnection: index, requestLine: requestLine,
                                   headers: headers, bodyCount: 0, bodySHA256: "", bodyError: nil)
            if seen.header("expect")?.lowercased() == "100-continue" {
                _ = try? socket.write("HTTP/1.1 100 Continue\r\n\r\n")
            }
            if let stall = seen.header("x-origin-stall-ms").flatMap(Int.init) {
                usleep(UInt32(min(stall, 10_000)) * 1000)
            }
            let hasher = SHA256Hasher()
            do {
                if seen.header("transfer-encoding")?.lowercased() == "chunked" {
                    seen.bodyCount = try readChunked(socket, into: hasher)
                } else if let length = seen.header("content-length").flatMap(Int.init) {
                    seen.bodyCount = try readCounted(socket, length, into: hasher)
                }
            } catch {
                seen.bodyError = "\(error)"
            }
            seen.bodySHA256 = hasher.finalHex()
            seenRequests.withLock { $0.append(seen) }
            if seen.bodyError != nil {
                _ = try? socket.write("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            }
            guard (try? respond(to: seen, on: socket)) != nil else { return }
            if seen.header("connection")?.lowercased() == "close" { return }
        }
    }

    private func respond(to seen: SeenRequest, on socket: TestSocket) throws {
        let parts = seen.requestLine.split(separator: " ")
        let target = parts.count > 1 ? String(parts[1]) : ""
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        var head = "HTTP/1.1 200 OK\r\n"
        func report(_ name: String, _ header: String) {
            head += "X-Seen-\(name): \(seen.header(header) ?? "absent")\r\n"
        }
        head += "X-Seen-Method: \(parts.first.map(String.init) ?? "")\r\n"
        head += "X-Seen-Path: \(target)\r\n"
        head += "X-Seen-Version: \(parts.count > 2 ? String(parts[2]) : "")\r\n"
        report("Via", "via")
        report("Host", "host")
        report("Proxy-Authorization", "proxy-authorization")
        report("Proxy-Connection", "proxy-connection")
        report("Connection", "connection")
        report("Keep-Alive", "keep-alive")
        report("X-Hop", "x-hop")
        report("X-End-To-End", "x-end-to-end")
        head += "X-Seen-Body-Length: \(seen.bodyCount)\r\n"
        head += "X-Seen-Body-SHA256: \(seen.bodySHA256)\r\n"
        head += "X-Seen-Connection-Index: \(seen.connection)\r\n"
        head += "X-Seen-Request-Index: \(seen.indexOnConnection)\r\n"
        if path.hasPrefix("/bytes/"), let count = Int(path.dropFirst("/bytes/".count)) {
            try socket.write(head + "Content-Length: \(count)\r\n\r\n")
            try socket.write(PatternBytes.make(count: count, seed: Self.responseSeed))
        } else if path.hasPrefix("/chunked/"), let count = Int(path.dropFirst("/chunked/".count)) {
            try socket.write(head + "Transfer-Encoding: chunked\r\n\r\n")
            let body = PatternBytes.make(count: count, seed: Self.responseSeed)
            var offset = 0
            while offset < body.count {
                let size = min(16 * 1024, body.count - offset)
                try socket.write(String(size, radix: 16) + "\r\n")
                try socket.write(Array(body[offset..<(offset + size)]) + [13, 10])
                offset += size
            }
            try socket.write("0\r\n\r\n")
        } else {
            try socket.write(head + "Content-Type: text/plain\r\nContent-Length: \(Self.helloBody.count)\r\n\r\n")
            try socket.write(Self.helloBody)
        }
    }

    private func readCounted(_ socket: TestSocket, _ length: Int, into hasher: SHA256Hasher) throws -> Int {
        var remaining = length
        while remaining > 0 {
            let chunk = try socket.read(max: min(remaining, 256 * 1024))
            if chunk.isEmpty { throw SocketError("body: EOF with \(remaining) bytes missing", ECONNABORTED) }
            hasher.update(chunk)
            remaining -= chunk.count
        }
        return length
    }

    private func readChunked(_ socket: TestSocket, into hasher: SHA256Hasher) throws -> Int {
        var total = 0
        while true {
            guard let line = try socket.readLine(), let text = String(bytes: line, encoding: .utf8) else {
                throw SocketError("chunk size: EOF", ECONNABORTED)
            }
            let sizeText = text.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                throw SocketError("bad chunk size line '\(text)'", EPROTO)
            }
            if size == 0 {
                while let trailer = try socket.readLine(), !trailer.isEmpty {}
                return total
            }
            var remaining = size
            while remaining > 0 {
                let chunk = try socket.read(max: min(remaining, 256 * 1024))
                if chunk.isEmpty { throw SocketError("chunk data: EOF", ECONNABORTED) }
                hasher.update(chunk)
                remaining -= chunk.count
            }
            total += size
            guard let crlf = try socket.readLine(), crlf.isEmpty else { throw SocketError("no CRLF after chunk", EPROTO) }
        }
    }
}
