/// Responses the relay writes itself, as ready-to-send bytes.
public enum ProxyResponses {
    /// The answer to an accepted CONNECT, after which the connection is a raw tunnel.
    public static func connectEstablished() -> [UInt8] {
        Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)
    }

    /// A refusal whose body is the reason code, so the client, the log line and the audit row
    /// all name the same word. The connection is always closed after it: once a request is
    /// refused the relay no longer trusts its idea of where the next one starts.
    /// `status` defaults to `reason.refusalStatus ?? 400`.
    /// Every refusal but a `407` names the relay in an RFC 9209 `Proxy-Status` field.
    public static func refusal(_ reason: ReasonCode, status: Int? = nil) -> [UInt8] {
        let code = status ?? reason.refusalStatus ?? 400
        let body = reason.rawValue + "\n"
        var head = "HTTP/1.1 \(code) \(reasonPhrase(code))\r\n"
        if code != 407 {
            head += "Proxy-Status: dynrelay; error=\(reason.proxyStatusError ?? "http_request_error"); details=\"\(reason.rawValue)\"\r\n"
        }
        head += "Content-Type: text/plain\r\n"
            + "Content-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n"
        return Array((head + body).utf8)
    }

    /// The standard reason phrase for the statuses the relay produces; "Error" otherwise
    /// (the phrase carries no meaning on the wire, the status does).
    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 400: return "Bad Request"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 407: return "Proxy Authentication Required"
        case 408: return "Request Timeout"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return "Error"
        }
    }
}

extension ProxyResponses {
    /// A `407` carrying one `Proxy-Authenticate` field per challenge (or another auth
    /// refusal status without them). Kept alive only when `keepAlive`: the multi-message
    /// schemes (NTLM, Negotiate) authenticate the connection the handshake runs on.
    public static func authRefusal(_ reason: ReasonCode, status: Int, challenges: [String], keepAlive: Bool) -> [UInt8] {
        let body = reason.clientText + "\n"
        var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        for challenge in challenges {
            head += "Proxy-Authenticate: \(challenge)\r\n"
        }
        head += "Content-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n"
        head += keepAlive ? "Proxy-Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"
        return Array((head + body).utf8)
    }

    /// The `200` to an accepted CONNECT, with a mutual-authentication token when there is one.
    public static func connectEstablished(proxyAuthenticate: String?) -> [UInt8] {
        guard let proxyAuthenticate else { return connectEstablished() }
        return Array("HTTP/1.1 200 Connection established\r\nProxy-Authenticate: \(proxyAuthenticate)\r\n\r\n".utf8)
    }
}
