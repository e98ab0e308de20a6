/// One header field line, name as received (case preserved for faithful forwarding) and the
/// value with its surrounding optional whitespace removed.
public struct HTTPHeader: Equatable, Hashable, Sendable {
    public var name: String
    public var value: String

    /// Creates a field line; the caller is responsible for the name being a token.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// Appends the value's bytes as they go on the wire.
    public func appendValue(to out: inout [UInt8]) {
        out.append(contentsOf: value.utf8)
    }
}
