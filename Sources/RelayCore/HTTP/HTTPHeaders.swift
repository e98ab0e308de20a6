/// The header fields of one message, in wire order.
///
/// Order is kept because forwarding must not reorder fields (some applications depend on the
/// order of repeated fields such as `Set-Cookie`). Lookups compare names ASCII
/// case-insensitively without allocating, since they run several times per request.
public struct HTTPHeaders: Equatable, Hashable, Sendable, Sequence {
    var fields: [HTTPHeader]

    /// Creates a header list in the given order.
    public init(_ fields: [HTTPHeader] = []) {
        self.fields = fields
    }

    /// Convenience for tests and synthesized messages: `HTTPHeaders([("Host", "a")])`.
    public init(_ pairs: [(String, String)]) {
        self.fields = pairs.map { HTTPHeader(name: $0.0, value: $0.1) }
    }

    /// Number of field lines (repeated names count once per line).
    public var count: Int { fields.count }

    /// Iterates the field lines in wire order.
    public func makeIterator() -> IndexingIterator<[HTTPHeader]> { fields.makeIterator() }

    /// Every value of `name`, one per field line, in wire order.
    public func values(_ name: String) -> [String] {
        var result: [String] = []
        for field in fields where HTTPBytes.equalsIgnoringASCIICase(field.name, name) {
            result.append(field.value)
        }
        return result
    }

    /// The value of the first field line named `name`.
    public func first(_ name: String) -> String? {
        for field in fields where HTTPBytes.equalsIgnoringASCIICase(field.name, name) {
            return field.value
        }
        return nil
    }

    /// Whether any field line is named `name`.
    public func contains(_ name: String) -> Bool {
        fields.contains { HTTPBytes.equalsIgnoringASCIICase($0.name, name) }
    }

    /// Removes every field line named `name`.
    public mutating func remove(_ name: String) {
        fields.removeAll { HTTPBytes.equalsIgnoringASCIICase($0.name, name) }
    }

    /// Adds a field line at the end.
    public mutating func append(name: String, value: String) {
        fields.append(HTTPHeader(name: name, value: value))
    }

    /// The comma-separated list elements of every `name` field, trimmed of optional whitespace,
    /// lowercased, empty elements dropped (RFC 9110 5.6.1 allows them). Meant for token lists
    /// such as `Connection` and `Transfer-Encoding`, not for quoted values.
    public func tokens(_ name: String) -> [String] {
        var result: [String] = []
        for field in fields where HTTPBytes.equalsIgnoringASCIICase(field.name, name) {
            for element in field.value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                var lower = element.drop { $0 == 0x20 || $0 == 0x09 }
                while let last = lower.last, last == 0x20 || last == 0x09 { lower = lower.dropLast() }
                if lower.isEmpty { continue }
                result.append(String(decoding: lower.map { HTTPBytes.asciiLowercased($0) }, as: UTF8.self))
            }
        }
        return result
    }
}
