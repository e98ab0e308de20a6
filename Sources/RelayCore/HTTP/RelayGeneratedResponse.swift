/// Whether a response to an absolute-form request was written by the proxy itself rather
/// than relayed from the app server: a `403` or `503` means something else from each. The
/// proxy says so in an RFC 9209 `Proxy-Status` field whose last member (the intermediary
/// closest to the client) carries an `error` (dynrelay does); squid says so in
/// `X-Squid-Error`.
public struct RelayGeneratedResponse: Equatable, Sendable {
    /// The proxy's name for itself (`dynrelay`, `squid`).
    public let proxy: String
    /// The RFC 9209 error type, or squid's error page name.
    public let error: String
    /// The reason code: `details` of the `Proxy-Status` member, else the error.
    public let reasonCode: String

    /// The proxy's own answer in `headers`, or nil when the response came from the server.
    public init?(_ headers: HTTPHeaders) {
        if let field = headers.values("Proxy-Status").last, let member = Self.lastMember(field),
           let error = member.parameters["error"] {
            proxy = member.name
            self.error = error
            reasonCode = member.parameters["details"] ?? error
            return
        }
        if let squid = headers.first("X-Squid-Error"), let name = squid.split(separator: " ").first, !name.isEmpty {
            proxy = "squid"
            error = String(name)
            reasonCode = String(name)
            return
        }
        return nil
    }

    /// The last list member of a `Proxy-Status` value: a token, then `; key=value` (token or
    /// quoted string) parameters. Commas inside quoted strings do not split members.
    static func lastMember(_ field: String) -> (name: String, parameters: [String: String])? {
        var members: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in field {
            if quoted {
                current.append(character)
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { quoted = false }
            } else if character == "," {
                members.append(current)
                current = ""
            } else {
                if character == "\"" { quoted = true }
                current.append(character)
            }
        }
        members.append(current)
        guard let last = members.last?.trimmingSpaces, !last.isEmpty else { return nil }
        var parts = Self.splitParameters(last)
        let name = parts.removeFirst().trimmingSpaces
        guard !name.isEmpty else { return nil }
        var parameters: [String: String] = [:]
        for part in parts {
            let pair = part.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces }
            guard pair.count == 2, !pair[0].isEmpty else { continue }
            parameters[pair[0].lowercased()] = Self.unquoted(pair[1])
        }
        return (name, parameters)
    }

    private static func splitParameters(_ member: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in member {
            if quoted {
                current.append(character)
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { quoted = false }
            } else if character == ";" {
                parts.append(current)
                current = ""
            } else {
                if character == "\"" { quoted = true }
                current.append(character)
            }
        }
        parts.append(current)
        return parts
    }

    private static func unquoted(_ value: String) -> String {
        guard value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") else { return value }
        var out = ""
        var escaped = false
        for character in value.dropFirst().dropLast() {
            if escaped {
                out.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                out.append(character)
            }
        }
        return out
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
