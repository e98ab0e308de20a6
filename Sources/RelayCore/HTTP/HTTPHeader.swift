/// One header field line, name as received (case preserved for faithful forwarding) and the
/// value with its surrounding optional whitespace removed.
public struct HTTPHeader: Equatable, Hashable, Sendable {
    /// How a value's text maps back to the bytes it arrived as.
    public enum ValueEncoding: Hashable, Sendable {
        /// The value was ASCII or valid UTF-8, and is its text's UTF-8.
        case utf8
        /// The value held obs-text that is not UTF-8 (RFC 9110 5.5: bytes 0x80–0xFF, which
        /// HTTP gives no meaning). Each byte is the Unicode scalar of the same number, as
        /// ISO-8859-1 reads it, and is written back as that one byte, so the field is
        /// forwarded exactly as received.
        case isoLatin1
    }

    /// The field name as received.
    public var name: String
    /// The value without surrounding whitespace; see `valueEncoding` for its bytes.
    public var value: String
    /// How `value` goes back on the wire.
    public var valueEncoding: ValueEncoding

    /// Creates a field line; the caller is responsible for the name being a token.
    public init(name: String, value: String, valueEncoding: ValueEncoding = .utf8) {
        self.name = name
        self.value = value
        self.valueEncoding = valueEncoding
    }

    /// A field whose value bytes are not UTF-8, kept byte for byte (`ValueEncoding.isoLatin1`).
    public init(name: String, isoLatin1 bytes: some Sequence<UInt8>) {
        var value = ""
        value.unicodeScalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
        self.init(name: name, value: value, valueEncoding: .isoLatin1)
    }

    /// Appends the value's bytes as they go on the wire.
    public func appendValue(to out: inout [UInt8]) {
        switch valueEncoding {
        case .utf8:
            // Native strings expose their bytes contiguously: copy them in one go rather than
            // through the UTF-8 view's iterator.
            let copied: Void? = value.utf8.withContiguousStorageIfAvailable { out.append(contentsOf: $0) }
            if copied == nil { out.append(contentsOf: value.utf8) }
        case .isoLatin1:
            out.append(contentsOf: value.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) })
        }
    }
}
