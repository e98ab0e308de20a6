/// The answers the relay gives itself to a TRACE or OPTIONS whose `Max-Forwards` is used up
/// (RFC 9110 7.6.2: the intermediary responds as the final recipient).
public enum LocalAnswer {
    /// OPTIONS: `200` with no content (RFC 9110 9.3.7 lets the answer say nothing more).
    public static func options(closeAfter: Bool) -> [UInt8] {
        Array(("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n" + (closeAfter ? "Connection: close\r\n" : "") + "\r\n").utf8)
    }

    /// TRACE: `200`, `message/http`, the request head as received (RFC 9110 9.3.8) minus
    /// every field that may carry a secret (`isSensitive`). The echo goes to whoever sent the
    /// request, but what a browser adds on its own (cookies, stored credentials) or a proxy
    /// in front adds would otherwise be readable by a script that could not read the
    /// fields themselves (cross-site tracing).
    public static func trace(_ head: HTTPRequestHead, closeAfter: Bool) -> [UInt8] {
        var echo: [UInt8] = []
        echo.append(contentsOf: "\(head.method) \(head.target) \(head.version)\r\n".utf8)
        for field in head.headers where !isSensitive(field) {
            echo.append(contentsOf: field.name.utf8)
            echo.append(contentsOf: ": ".utf8)
            field.appendValue(to: &echo)
            echo.append(contentsOf: "\r\n".utf8)
        }
        echo.append(contentsOf: "\r\n".utf8)
        let head = "HTTP/1.1 200 OK\r\nContent-Type: message/http\r\nContent-Length: \(echo.count)\r\n"
            + (closeAfter ? "Connection: close\r\n" : "") + "\r\n"
        return Array(head.utf8) + echo
    }

    /// Fields never echoed: the credential and cookie fields by name, any name that speaks
    /// of authentication, sessions, tokens, keys or secrets (`X-Api-Key`, `X-Auth-Token`,
    /// `X-CSRF-Token`, `X-Session-Id`, …), and any value that starts with an HTTP
    /// authentication scheme, whatever the field is called.
    public static func isSensitive(_ field: HTTPHeader) -> Bool {
        let name = field.name.lowercased()
        if sensitiveNameParts.contains(where: { name.contains($0) }) { return true }
        let value = field.value.lowercased()
        return credentialSchemes.contains { value.hasPrefix($0) }
    }

    private static let sensitiveNameParts = [
        "auth", "cookie", "token", "secret", "passw", "key", "session", "credential", "signature", "csrf", "xsrf", "jwt",
        "ticket", "nonce",
    ]
    private static let credentialSchemes = ["basic ", "bearer ", "digest ", "negotiate ", "ntlm ", "aws4-hmac", "hoba "]
}
