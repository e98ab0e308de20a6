/// The responses of the relay's own endpoints, as ready-to-send bytes.
public enum RelayEndpointAnswer {
    /// A JSON answer. `headOnly` (HEAD) keeps the `Content-Length` of the body it leaves
    /// out (RFC 9110 9.3.2). `closeAfter` ends the connection; otherwise an HTTP/1.0
    /// client, which closes by default, is told the connection stays (`http1_0`).
    /// `proxyAuthenticate`: Negotiate's mutual-authentication token.
    public static func json(status: Int, document: JSONValue, headOnly: Bool, closeAfter: Bool, http1_0: Bool,
                            proxyAuthenticate: String? = nil) -> [UInt8] {
        let body = Array((document.text + "\n").utf8)
        var head = "HTTP/1.1 \(status) \(ProxyResponses.reasonPhrase(status))\r\n"
        if let proxyAuthenticate {
            head += "Proxy-Authenticate: \(proxyAuthenticate)\r\n"
        }
        // A status read from a cache would hide a relay that went down or began draining.
        head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\nCache-Control: no-store\r\n"
        if closeAfter {
            head += "Connection: close\r\n"
        } else if http1_0 {
            head += "Connection: keep-alive\r\n"
        }
        head += "\r\n"
        return Array(head.utf8) + (headOnly ? [] : body)
    }

    /// `405` for a method an endpoint does not answer, naming the ones it does; closed
    /// like every refusal.
    public static func methodNotAllowed() -> [UInt8] {
        let body = ReasonCode.methodNotAllowed.rawValue + "\n"
        let head = "HTTP/1.1 405 \(ProxyResponses.reasonPhrase(405))\r\n"
            + "Allow: \(WellKnownEndpoint.methods.joined(separator: ", "))\r\n"
            + "Content-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return Array((head + body).utf8)
    }
}
