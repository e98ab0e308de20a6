#if canImport(Glibc)
import Glibc
#endif

/// One proxy answer to a CONNECT: the status, the header fields, and whether the
/// connection may carry the next request. Its body (a 407 page) has been read and dropped.
struct ProxyResponse {
    let statusLine: String
    let status: Int
    /// Field names lowercased, in order, repeated fields kept apart.
    let fields: [(name: String, value: String)]
    /// False when the proxy said `close` or sent a body delimited by closing.
    let reusable: Bool

    func values(_ name: String) -> [String] {
        fields.filter { $0.name == name }.map(\.value)
    }

    /// Reads one response head and its `Content-Length` body from a blocking socket. The
    /// upstream never speaks first, so after a 2xx nothing follows the head; after a 4xx
    /// nothing follows the body until the client sends again.
    static func read(from fd: Int32) throws -> ProxyResponse {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var headEnd: Int?
        while headEnd == nil {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw SocketError(operation: "read proxy response", code: n == 0 ? ECONNRESET : errno) }
            let searchFrom = max(0, buffer.count - 3)
            buffer.append(contentsOf: chunk[0..<n])
            headEnd = headerTerminator(in: buffer, from: searchFrom)
            guard headEnd != nil || buffer.count < 65536 else {
                throw SocketError(operation: "proxy response head too long", code: EPROTO)
            }
        }
        // The common answer, 2xx with the tunnel open: nothing after the head, and no
        // field the client needs. Skip the field parsing, so an authenticated tunnel costs
        // the client no more than the unauthenticated path's status-line check and the
        // bench compares the proxies' work, not the client's.
        if buffer.count == headEnd! + 4, let status = successStatus(buffer) {
            let statusLine = String(decoding: buffer.prefix(while: { $0 != 13 }), as: UTF8.self)
            return ProxyResponse(statusLine: statusLine, status: status, fields: [], reusable: true)
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
            throw SocketError(operation: "bad proxy status line: \(statusLine)", code: EPROTO)
        }
        var fields: [(name: String, value: String)] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces()
            fields.append((name, value))
        }
        let connection = fields.filter { $0.name == "connection" || $0.name == "proxy-connection" }
            .map { $0.value.lowercased() }
        var reusable = !connection.contains { $0.contains("close") } && statusLine.hasPrefix("HTTP/1.1")
        let bodyStart = headEnd! + 4
        let already = buffer.count - bodyStart
        if let length = fields.first(where: { $0.name == "content-length" }).flatMap({ Int($0.value) }) {
            var remaining = length - already
            guard remaining >= 0 else { throw SocketError(operation: "proxy sent more than its Content-Length", code: EPROTO) }
            while remaining > 0 {
                let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, min($0.count, remaining)) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { reusable = false; break }
                remaining -= n
            }
        } else if !(200..<300).contains(status) {
            // No length on an error page: it ends when the proxy closes.
            reusable = false
        }
        return ProxyResponse(statusLine: statusLine, status: status, fields: fields, reusable: reusable)
    }

    private static let httpPrefix = Array("HTTP/1.".utf8)

    /// The status of an `HTTP/1.x 2xx` status line, else nil.
    private static func successStatus(_ buffer: [UInt8]) -> Int? {
        guard buffer.count >= 12, buffer.starts(with: httpPrefix), buffer[8] == 0x20,
              buffer[9] == UInt8(ascii: "2"), (0x30...0x39).contains(buffer[10]), (0x30...0x39).contains(buffer[11])
        else { return nil }
        return 200 + Int(buffer[10] - 0x30) * 10 + Int(buffer[11] - 0x30)
    }

    private static func headerTerminator(in buffer: [UInt8], from start: Int) -> Int? {
        guard buffer.count >= 4 else { return nil }
        var index = start
        while index + 3 < buffer.count {
            if buffer[index] == 13, buffer[index + 1] == 10, buffer[index + 2] == 13, buffer[index + 3] == 10 {
                return index
            }
            index += 1
        }
        return nil
    }
}

/// A CONNECT that ended in anything but the status the handshake needed.
struct ProxyAuthError: Error, CustomStringConvertible {
    let description: String
}

extension Substring {
    func trimmingSpaces() -> String {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return String(text)
    }
}
