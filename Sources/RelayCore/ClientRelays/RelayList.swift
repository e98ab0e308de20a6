/// Reads the relay list a user gives: entries `URL` or `URL;priority=N`, from repeated
/// `--relay` options or the comma-separated `DYNRELAY_RELAYS` variable. An entry without a
/// priority gets its position in the list (1 for the first), so the order given is the
/// order of preference unless said otherwise.
public enum RelayList {
    /// The environment variable read when no relay is given on the command line.
    public static let environmentVariable = "DYNRELAY_RELAYS"

    /// The endpoints of `entries`, in the order given.
    public static func parse(_ entries: [String]) throws(RelayListError) -> [RelayEndpoint] {
        guard !entries.isEmpty else { throw .emptyList }
        var endpoints: [RelayEndpoint] = []
        for (index, entry) in entries.enumerated() {
            let endpoint = try parseEntry(entry, position: index + 1)
            if endpoints.contains(where: { $0.url.origin == endpoint.url.origin }) { throw .duplicateRelay(entry) }
            endpoints.append(endpoint)
        }
        return endpoints
    }

    /// The endpoints of a `DYNRELAY_RELAYS` value; empty elements (a trailing comma) are skipped.
    public static func parse(environmentValue: String) throws(RelayListError) -> [RelayEndpoint] {
        let entries = environmentValue.split(separator: ",").map(trimmed).filter { !$0.isEmpty }
        return try parse(entries)
    }

    private static func parseEntry(_ entry: String, position: Int) throws(RelayListError) -> RelayEndpoint {
        let parts = entry.split(separator: ";", omittingEmptySubsequences: false).map(trimmed)
        let url: ClientURL
        do {
            url = try ClientURL(parsing: parts[0])
        } catch {
            throw .badURL(entry, error)
        }
        // A relay is addressed by its listener; a path would be silently ignored.
        guard url.target == "/" else { throw .badURL(entry, nil) }
        var priority = position
        for parameter in parts.dropFirst() {
            guard let equals = parameter.firstIndex(of: "="),
                  parameter[..<equals].trimmingWhitespace.lowercased() == "priority"
            else { throw .unknownParameter(entry) }
            let value = parameter[parameter.index(after: equals)...].trimmingWhitespace
            guard value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(value), number >= 1 else {
                throw .badPriority(entry)
            }
            priority = number
        }
        return RelayEndpoint(url: url, priority: priority)
    }

    private static func trimmed(_ text: Substring) -> String { String(text.trimmingWhitespace) }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    fileprivate var trimmingWhitespace: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
