/// An auth-param list (RFC 9110 §11.2): `name=token` or `name="quoted string"` pairs,
/// comma separated, as carried by Digest credentials and challenges.
///
/// Names are matched case-insensitively and stored lowercased; a name given twice is an
/// error rather than a guess (Squid's Digest parser has had CVEs from such guesses).
/// Quoted values are unescaped and must be valid UTF-8.
public struct AuthParameters: Sendable, Equatable {
    /// One parameter as received.
    public struct Parameter: Sendable, Equatable {
        /// The lowercased parameter name.
        public let name: String
        /// The value, unquoted and unescaped.
        public let value: String
        /// True when the value was a quoted-string rather than a token.
        public let wasQuoted: Bool
    }

    /// The parameters in the order received.
    public let parameters: [Parameter]

    /// The value of the parameter named `name` (case-insensitive), if present.
    public subscript(name: String) -> String? {
        parameter(name)?.value
    }

    /// The whole parameter named `name` (case-insensitive), if present.
    public func parameter(_ name: String) -> Parameter? {
        // Stored names are lowercased, and callers look up lowercase literals: plain `==`
        // then compares two small strings in a word or two, a dozen times per Digest request.
        let key = name.utf8.contains(where: AuthSyntax.isASCIIUppercase) ? AuthSyntax.asciiLowercased(name) : name
        return parameters.first { $0.name == key }
    }

    /// Parses `#auth-param` from `bytes`, accepting the empty list elements RFC 9110 §5.6.1
    /// tells recipients to skip, and refusing more than `maxCount` parameters.
    public init(parsing bytes: ArraySlice<UInt8>, maxCount: Int) throws(AuthError) {
        var result: [Parameter] = []
        result.reserveCapacity(12)
        var index = bytes.startIndex
        let end = bytes.endIndex
        while true {
            // Empty list elements and the whitespace around them.
            while index < end, bytes[index] == UInt8(ascii: ",") || AuthSyntax.isWhitespace(bytes[index]) {
                index += 1
            }
            if index == end { break }

            let nameStart = index
            while index < end, AuthSyntax.isTokenChar(bytes[index]) { index += 1 }
            guard index > nameStart else { throw .malformedHeader }
            let name = bytes[nameStart..<index].withUnsafeBufferPointer { raw in
                // Names usually arrive lowercase: decode them straight from the header. (A
                // lazily lowercased view is not contiguous, and String(decoding:) then takes
                // a dynamic-cast path that cost more than the rest of the parse.)
                if !raw.contains(where: AuthSyntax.isASCIIUppercase) {
                    return String(decoding: raw, as: UTF8.self)
                }
                return String(decoding: raw.map(AuthSyntax.asciiLowercased), as: UTF8.self)
            }
            index = AuthSyntax.skipWhitespace(bytes, from: index)
            guard index < end, bytes[index] == UInt8(ascii: "=") else { throw .malformedHeader }
            index = AuthSyntax.skipWhitespace(bytes, from: index + 1)
            guard index < end else { throw .malformedHeader }

            let value: String
            let quoted = bytes[index] == UInt8(ascii: "\"")
            if quoted {
                let (raw, next) = try Self.quotedString(bytes, openingQuoteAt: index)
                let text = switch raw {
                case .verbatim(let range): AuthSyntax.utf8String(bytes[range])
                case .unescaped(let content): AuthSyntax.utf8String(content[...])
                }
                guard let text else { throw .badParameter(name) }
                value = text
                index = next
            } else {
                let valueStart = index
                while index < end, AuthSyntax.isTokenChar(bytes[index]) { index += 1 }
                guard index > valueStart else { throw .malformedHeader }
                value = String(decoding: bytes[valueStart..<index], as: UTF8.self)
            }
            // A linear scan: at most `maxCount` short names, cheaper than hashing them.
            guard !result.contains(where: { $0.name == name }) else { throw .duplicateParameter(name) }
            guard result.count < maxCount else { throw .tooManyParameters }
            result.append(Parameter(name: name, value: value, wasQuoted: quoted))

            index = AuthSyntax.skipWhitespace(bytes, from: index)
            if index == end { break }
            guard bytes[index] == UInt8(ascii: ",") else { throw .malformedHeader }
        }
        parameters = result
    }

    /// A quoted-string's content: the bytes between the quotes when nothing was escaped
    /// (no copy), else the unescaped bytes.
    private enum QuotedContent {
        case verbatim(Range<Int>)
        case unescaped([UInt8])
    }

    /// Unescapes the quoted-string starting at `start`; returns its content and the index
    /// just past the closing quote.
    private static func quotedString(_ bytes: ArraySlice<UInt8>, openingQuoteAt start: Int) throws(AuthError) -> (QuotedContent, Int) {
        var content: [UInt8]?
        var index = start + 1
        while index < bytes.endIndex {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                return (content.map(QuotedContent.unescaped) ?? .verbatim(start + 1..<index), index + 1)
            case UInt8(ascii: "\\"):
                if content == nil { content = Array(bytes[start + 1..<index]) }
                index += 1
                guard index < bytes.endIndex else { throw .malformedHeader }
                let escaped = bytes[index]
                // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
                guard escaped == 0x09 || escaped >= 0x20 && escaped != 0x7F else { throw .malformedHeader }
                content!.append(escaped)
            case 0x09, 0x20, 0x21, 0x23...0x5B, 0x5D...0x7E, 0x80...0xFF:
                content?.append(byte)
            default:
                throw .malformedHeader
            }
            index += 1
        }
        throw .malformedHeader
    }
}
