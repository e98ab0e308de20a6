/// The head of a request the client library sends, as bytes: the request line (origin-form
/// to a server or inside a tunnel, absolute-form to a proxy), `Host`, the caller's fields and
/// the framing field the body needs.
///
/// Framing is the client's alone: a caller's `Host`, `Content-Length`, `Transfer-Encoding`,
/// `Connection` and `Proxy-Authorization` are dropped, so the head cannot disagree with the
/// body that follows or smuggle a second request. Names must be tokens and values free of
/// control bytes, else the head is refused rather than sent.
public enum ClientRequestHead {
    /// Where the request line points.
    public enum Form: Sendable, Hashable {
        /// `GET /path HTTP/1.1`: to the origin itself (inside a tunnel).
        case origin
        /// `GET http://host:port/path HTTP/1.1`: to a proxy.
        case absolute
    }

    /// How the body that follows is framed.
    public enum Framing: Sendable, Hashable {
        case none
        case contentLength(UInt64)
        case chunked
    }

    /// Fields the client sets itself; the caller's are dropped.
    public static let reservedFields = ["Host", "Content-Length", "Transfer-Encoding", "Connection",
                                        "Proxy-Authorization", "Proxy-Connection", "TE", "Upgrade", "Trailer"]

    /// The head's bytes, or nil when `method`, a field name or a value cannot be sent as is.
    /// `extra` (authorization, cookies) follows the caller's fields.
    public static func encode(method: String, url: ClientURL, form: Form, headers: HTTPHeaders,
                              extra: [(name: String, value: String)] = [], framing: Framing) -> [UInt8]? {
        guard !method.isEmpty, method.utf8.allSatisfy(HTTPBytes.isTokenChar) else { return nil }
        let target = form == .absolute ? "\(url.scheme.rawValue)://\(url.authority)\(url.target)" : url.target
        var out = Array("\(method) \(target) HTTP/1.1\r\nHost: \(url.authority)\r\n".utf8)
        out.reserveCapacity(512)
        for field in headers where !reservedFields.contains(where: { HTTPBytes.equalsIgnoringASCIICase($0, field.name) }) {
            guard append(name: field.name, value: field.value, to: &out) else { return nil }
        }
        for field in extra {
            guard append(name: field.name, value: field.value, to: &out) else { return nil }
        }
        switch framing {
        case .none: break
        case .contentLength(let length): out += Array("Content-Length: \(length)\r\n".utf8)
        case .chunked: out += Array("Transfer-Encoding: chunked\r\n".utf8)
        }
        out += [13, 10]
        return out
    }

    /// One chunk of a chunked body: size line, data, CRLF. Empty data would end the body, so
    /// it frames to nothing.
    public static func chunk(_ data: [UInt8]) -> [UInt8] {
        guard !data.isEmpty else { return [] }
        var out = Array(String(data.count, radix: 16).utf8) + [13, 10]
        out.reserveCapacity(out.count + data.count + 2)
        out += data
        out += [13, 10]
        return out
    }

    /// The last chunk and an empty trailer section.
    public static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)

    private static func append(name: String, value: String, to out: inout [UInt8]) -> Bool {
        guard !name.isEmpty, name.utf8.allSatisfy(HTTPBytes.isTokenChar),
              value.utf8.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) })
        else { return false }
        out += Array(name.utf8) + [58, 32] + Array(value.utf8) + [13, 10]
        return true
    }
}
