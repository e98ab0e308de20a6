/// A JSON value whose objects keep their keys in the order given, so a document renders to
/// the same bytes every time and a test can compare them.
public indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case string(String)
    case array([JSONValue])
    /// Keys in the order written; each key once (the caller's duty).
    case object([(String, JSONValue)])

    /// Compact JSON text (RFC 8259), no insignificant whitespace.
    public var text: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .string(let value): out += JSONText.quoted(value)
        case .array(let values):
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                value.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += "," }
                out += JSONText.quoted(key)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        lhs.text == rhs.text
    }
}
