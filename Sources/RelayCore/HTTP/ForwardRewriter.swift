/// Rewrites heads crossing the relay: what the upstream and the client each may see.
///
/// Hop-by-hop fields describe one connection and must not cross the relay (RFC 9110 7.6.1);
/// `Proxy-Authorization` above all carries the client's credentials for *this* proxy.
/// Bodies are relayed verbatim, so `Transfer-Encoding` and `Content-Length` are kept.
public enum ForwardRewriter {
    /// Origin-form request head for the upstream: `METHOD pathAndQuery HTTP/1.1`, `Host:
    /// hostHeader` first (RFC 9112 3.2 asks for it first and replaces the client's), the
    /// remaining fields in order minus hop-by-hop ones, and `1.1 viaName` added to the last
    /// `Via` line or as a new `Via` line at the end. Always HTTP/1.1 towards the upstream.
    ///
    /// Every string must come from the parsers, `RequestTarget` or configuration: a CR or LF in
    /// them would inject lines, and is a programmer error caught by debug assertions.
    public static func upstreamRequest(_ head: HTTPRequestHead, hostHeader: String, pathAndQuery: String, viaName: String) -> [UInt8] {
        assert(isLineSafe(head.method) && isLineSafe(hostHeader) && isLineSafe(pathAndQuery) && isLineSafe(viaName)
            && head.headers.allSatisfy { isLineSafe($0.name) && isLineSafe($0.value) }, "CR/LF in a head being forwarded")
        var out: [UInt8] = []
        out.reserveCapacity(256 + head.headers.count * 32)
        append(&out, head.method)
        append(&out, " ")
        append(&out, pathAndQuery)
        append(&out, " HTTP/1.1\r\nHost: ")
        append(&out, hostHeader)
        append(&out, "\r\n")
        let listed = connectionListed(head.headers)
        appendFields(&out, head.headers, viaName: viaName) { name in
            isHopByHop(name) || HTTPBytes.equalsIgnoringASCIICase(name, "Host") || listed.contains { HTTPBytes.equalsIgnoringASCIICase($0, name) }
        }
        append(&out, "\r\n")
        return out
    }

    /// Response head for the client: the relay's own version (`HTTP/1.1`, RFC 9110 2.5), the
    /// upstream's status and reason, fields minus hop-by-hop ones, `Via` as for requests, and
    /// `Connection: close` last when `closeAfter` (callers must pass true when the response is
    /// framed `.untilClose`, since its end is the close itself).
    public static func clientResponse(_ head: HTTPResponseHead, viaName: String, closeAfter: Bool) -> [UInt8] {
        assert(isLineSafe(head.reason) && isLineSafe(viaName)
            && head.headers.allSatisfy { isLineSafe($0.name) && isLineSafe($0.value) }, "CR/LF in a head being forwarded")
        var out: [UInt8] = []
        out.reserveCapacity(256 + head.headers.count * 32)
        append(&out, "HTTP/1.1 \(head.status) ")
        append(&out, head.reason)
        append(&out, "\r\n")
        let listed = connectionListed(head.headers)
        appendFields(&out, head.headers, viaName: viaName) { name in
            isHopByHop(name) || listed.contains { HTTPBytes.equalsIgnoringASCIICase($0, name) }
        }
        if closeAfter { append(&out, "Connection: close\r\n") }
        append(&out, "\r\n")
        return out
    }

    /// Whether the connection closes after this message: HTTP/1.1 persists unless
    /// `Connection: close`; HTTP/1.0 persists only with `Connection: keep-alive`; any other
    /// version closes.
    public static func wantsClose(version: HTTPVersion, headers: HTTPHeaders) -> Bool {
        let tokens = headers.tokens("Connection")
        if tokens.contains("close") { return true }
        if version == .http1_1 { return false }
        if version == .http1_0 { return !tokens.contains("keep-alive") }
        return true
    }

    /// The `Host` value for an upstream request: IPv6 literals bracketed, the scheme's default
    /// port (80 http, 443 https) omitted, as RFC 9110 7.2 recommends.
    public static func hostHeaderValue(scheme: String, host: RawHost, port: UInt16) -> String {
        let name = host.bracketed ? "[" + host.text + "]" : host.text
        let isDefault = (scheme == "http" && port == 80) || (scheme == "https" && port == 443)
        return isDefault ? name : name + ":" + String(port)
    }

    /// Fields a `Connection` list may never strip: the relay framed the body by
    /// Content-Length/Transfer-Encoding and forwards it verbatim, so dropping either would
    /// make the next hop delimit it differently (a smuggling desync); Host is rewritten anyway.
    static let neverStripped: [String] = ["content-length", "transfer-encoding", "host"]

    /// The extra field names `Connection` declares hop-by-hop (lowercased), minus the ones
    /// removed anyway and the ones it may never strip.
    static func connectionListed(_ headers: HTTPHeaders) -> [String] {
        headers.tokens("Connection").filter { !isHopByHop($0) && !neverStripped.contains($0) }
    }

    /// Whether `name` is removed in both directions whatever `Connection` says: Connection,
    /// Keep-Alive, Proxy-Connection, Proxy-Authorization, Proxy-Authenticate, TE, Trailer,
    /// Upgrade. Dispatches on length first because this runs for every field of every
    /// forwarded message and almost every name differs in length.
    static func isHopByHop(_ name: String) -> Bool {
        switch name.utf8.count {
        case 2: return HTTPBytes.equalsIgnoringASCIICase(name, "TE")
        case 7: return HTTPBytes.equalsIgnoringASCIICase(name, "Trailer") || HTTPBytes.equalsIgnoringASCIICase(name, "Upgrade")
        case 10: return HTTPBytes.equalsIgnoringASCIICase(name, "Connection") || HTTPBytes.equalsIgnoringASCIICase(name, "Keep-Alive")
        case 16: return HTTPBytes.equalsIgnoringASCIICase(name, "Proxy-Connection")
        case 18: return HTTPBytes.equalsIgnoringASCIICase(name, "Proxy-Authenticate")
        case 19: return HTTPBytes.equalsIgnoringASCIICase(name, "Proxy-Authorization")
        default: return false
        }
    }

    /// Writes the fields `skip` does not reject, in order, adding `1.1 viaName` to the last
    /// kept `Via` line (or as a new last line), without building an intermediate header list.
    private static func appendFields(_ out: inout [UInt8], _ headers: HTTPHeaders, viaName: String, skip: (String) -> Bool) {
        let fields = headers.fields
        var lastVia = -1
        for (index, field) in fields.enumerated() where HTTPBytes.equalsIgnoringASCIICase(field.name, "Via") && !skip(field.name) {
            lastVia = index
        }
        for (index, field) in fields.enumerated() where !skip(field.name) {
            append(&out, field.name)
            append(&out, ": ")
            field.appendValue(to: &out)
            if index == lastVia {
                if !field.value.isEmpty { append(&out, ", ") }
                append(&out, "1.1 ")
                append(&out, viaName)
            }
            append(&out, "\r\n")
        }
        if lastVia < 0 {
            append(&out, "Via: 1.1 ")
            append(&out, viaName)
            append(&out, "\r\n")
        }
    }

    private static func isLineSafe(_ text: String) -> Bool {
        !text.utf8.contains { $0 == HTTPBytes.cr || $0 == HTTPBytes.lf }
    }

    private static func append(_ out: inout [UInt8], _ text: String) {
        // Native strings expose their bytes contiguously: copy them in one go rather than
        // through the UTF-8 view's iterator.
        let copied: Void? = text.utf8.withContiguousStorageIfAvailable { out.append(contentsOf: $0) }
        if copied == nil { out.append(contentsOf: text.utf8) }
    }
}
