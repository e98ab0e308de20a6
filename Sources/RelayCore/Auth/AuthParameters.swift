/// An auth-param list (RFC 9110 §11.2): `name=token` or `name="quoted string"` pairs,
/// comma separated, as carried by Digest credentials and challenges.
///
/// Names are matched case-insensitively; a name given twice is an error rather than a
/// guess (Squid's Digest parser has had CVEs from such guesses). Quoted values must be
/// valid UTF-8 once unescaped.
///
/// Parsing checks the whole grammar but records only where each name and value lie in
/// the received bytes: a Digest request carries a dozen parameters and reads most of them
/// once, so a `String` is built only for a value that is asked for, and `forEachRaw` hands
/// out where every value lies without building one at all.
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

    /// Where one parameter lies in `bytes`.
    private struct Span: Sendable {
        let name: Range<Int>
        /// The value without its quotes.
        let value: Range<Int>
        let quoted: Bool
        /// The value holds quoted-pairs (`\x`) still to undo.
        let escaped: Bool

        func shifted(by offset: Int) -> Span {
            Span(name: name.lowerBound + offset..<name.upperBound + offset,
                 value: value.lowerBound + offset..<value.upperBound + offset, quoted: quoted, escaped: escaped)
        }
    }

    private let bytes: ArraySlice<UInt8>
    private let spans: [Span]

    /// The parameters in the order received.
    public var parameters: [Parameter] {
        spans.map { span in
            Parameter(name: Self.lowercasedName(bytes[span.name]), value: string(of: span), wasQuoted: span.quoted)
        }
    }

    /// The value of the parameter named `name` (case-insensitive), if present.
    public subscript(name: String) -> String? {
        span(named: name).map(string(of:))
    }

    /// The whole parameter named `name` (case-insensitive), if present.
    public func parameter(_ name: String) -> Parameter? {
        span(named: name).map { Parameter(name: AuthSyntax.asciiLowercased(name), value: string(of: $0), wasQuoted: $0.quoted) }
    }

    /// Where a value lies in the received bytes, still quoted-escaped when `escaped`: what a
    /// caller reading most of the list keeps per parameter instead of a copy.
    struct RawValue: Sendable {
        fileprivate let range: Range<Int>
        fileprivate let escaped: Bool

        /// Bytes as received: the value unescaped is no longer.
        var count: Int { range.count }
    }

    /// Calls `body` with each parameter's name as received and where its value lies, in
    /// order, without a reference or copy per parameter (Digest credentials read a dozen
    /// on every request); `appendValue` then copies the ones kept.
    func forEachRaw(_ body: (_ name: UnsafeRawBufferPointer, _ value: RawValue) -> Void) {
        bytes.withUnsafeBytes { received in
            let offset = bytes.startIndex
            for span in spans {
                body(UnsafeRawBufferPointer(rebasing: received[span.name.lowerBound - offset..<span.name.upperBound - offset]),
                     RawValue(range: span.value, escaped: span.escaped))
            }
        }
    }

    /// Appends `value` unquoted and unescaped to `storage`.
    func appendValue(_ value: RawValue, to storage: inout [UInt8]) {
        if value.escaped {
            storage += Self.unescape(bytes[value.range])
        } else {
            // From the buffer: appending the slice went through the generic sequence path.
            bytes.withUnsafeBufferPointer { received in
                let offset = bytes.startIndex
                storage.append(contentsOf: UnsafeBufferPointer(rebasing: received[value.range.lowerBound - offset..<value.range.upperBound - offset]))
            }
        }
    }

    /// Lists compare by their parameters, not by how the header spelled them.
    public static func == (lhs: AuthParameters, rhs: AuthParameters) -> Bool {
        lhs.parameters == rhs.parameters
    }

    /// Parses `#auth-param` from `bytes`, accepting the empty list elements RFC 9110 §5.6.1
    /// tells recipients to skip, and refusing more than `maxCount` parameters.
    public init(parsing bytes: ArraySlice<UInt8>, maxCount: Int) throws(AuthError) {
        let scanned = bytes.withUnsafeBufferPointer { Self.scan($0, base: bytes.startIndex, maxCount: maxCount) }
        switch scanned {
        case .success(let spans):
            self.spans = spans
            self.bytes = bytes
        case .failure(let error):
            throw error
        }
    }

    /// One pass over the list, checking the grammar and recording where each parameter lies
    /// (as indices of the slice, which starts at `base`). It runs on an unsafe buffer: on a
    /// slice every byte read was a bounds check, which cost more than the scan itself.
    private static func scan(_ bytes: UnsafeBufferPointer<UInt8>, base: Int, maxCount: Int) -> Result<[Span], AuthError> {
        var spans: [Span] = []
        spans.reserveCapacity(12)
        var index = 0
        let end = bytes.count
        func skipWhitespace() {
            while index < end, AuthSyntax.isWhitespace(bytes[index]) { index += 1 }
        }
        while true {
            // Empty list elements and the whitespace around them.
            while index < end, bytes[index] == UInt8(ascii: ",") || AuthSyntax.isWhitespace(bytes[index]) {
                index += 1
            }
            if index == end { break }

            let nameStart = index
            while index < end, HTTPBytes.isTokenChar(bytes[index]) { index += 1 }
            guard index > nameStart else { return .failure(.malformedHeader) }
            let name = nameStart..<index
            skipWhitespace()
            guard index < end, bytes[index] == UInt8(ascii: "=") else { return .failure(.malformedHeader) }
            index += 1
            skipWhitespace()
            guard index < end else { return .failure(.malformedHeader) }

            let span: Span
            if bytes[index] == UInt8(ascii: "\"") {
                guard let (value, escaped, nonASCII, next) = quotedString(bytes, openingQuoteAt: index) else {
                    return .failure(.malformedHeader)
                }
                span = Span(name: name, value: value, quoted: true, escaped: escaped)
                index = next
                // Checked in place (only an escaped value is copied, to undo its escapes): a
                // client decides how many non-ASCII values a header holds.
                if nonASCII {
                    let raw = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[value]))
                    let text = escaped ? unescape(raw).withUnsafeBytes(HTTPBytes.string) : HTTPBytes.string(raw)
                    guard text != nil else { return .failure(.badParameter(lowercasedName(bytes[name]))) }
                }
            } else {
                let valueStart = index
                while index < end, HTTPBytes.isTokenChar(bytes[index]) { index += 1 }
                guard index > valueStart else { return .failure(.malformedHeader) }
                span = Span(name: name, value: valueStart..<index, quoted: false, escaped: false)
            }
            // A linear scan: at most `maxCount` short names, cheaper than hashing them.
            guard !spans.contains(where: { sameName(bytes[$0.name.lowerBound - base..<$0.name.upperBound - base], bytes[name]) }) else {
                return .failure(.duplicateParameter(lowercasedName(bytes[name])))
            }
            guard spans.count < maxCount else { return .failure(.tooManyParameters) }
            spans.append(span.shifted(by: base))

            skipWhitespace()
            if index == end { break }
            guard bytes[index] == UInt8(ascii: ",") else { return .failure(.malformedHeader) }
        }
        return .success(spans)
    }

    private func span(named key: String) -> Span? {
        var key = key
        return key.withUTF8(span(named:))
    }

    private func span(named key: UnsafeBufferPointer<UInt8>) -> Span? {
        bytes.withUnsafeBufferPointer { received in
            let offset = bytes.startIndex
            return spans.first { span in
                Self.sameName(received[span.name.lowerBound - offset..<span.name.upperBound - offset], key[...])
            }
        }
    }

    /// Values are checked as UTF-8 when parsed, so decoding here cannot repair anything.
    private func string(of span: Span) -> String {
        content(of: span).withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
    }

    private func content(of span: Span) -> ArraySlice<UInt8> {
        Self.content(of: span, in: bytes)
    }

    private static func content(of span: Span, in bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        span.escaped ? unescape(bytes[span.value])[...] : bytes[span.value]
    }

    /// A quoted-string's content with its quoted-pairs undone; `quotedString` checked that
    /// every backslash in it escapes a byte inside it.
    private static func unescape(_ content: some Collection<UInt8>) -> [UInt8] {
        var unescaped: [UInt8] = []
        unescaped.reserveCapacity(content.count)
        var escaping = false
        for byte in content {
            if !escaping && byte == UInt8(ascii: "\\") {
                escaping = true
                continue
            }
            escaping = false
            unescaped.append(byte)
        }
        return unescaped
    }

    private static func sameName(_ a: Slice<UnsafeBufferPointer<UInt8>>, _ b: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        HTTPBytes.equalsIgnoringASCIICase(UnsafeBufferPointer(rebasing: a), UnsafeBufferPointer(rebasing: b))
    }

    private static func lowercasedName(_ name: some Sequence<UInt8>) -> String {
        String(decoding: name.map(HTTPBytes.asciiLowercased), as: UTF8.self)
    }

    /// True when every byte of `word` is qdtext that ends nothing: SP or VCHAR, but neither
    /// `"` nor `\\`.
    static func isPlainQuotedWord(_ word: UInt64) -> Bool {
        HTTPFieldValueScan.isPlainWord(word)
            && !ByteWords.contains(word, UInt8(ascii: "\"")) && !ByteWords.contains(word, UInt8(ascii: "\\"))
    }

    /// Checks the quoted-string starting at `start`; returns the range between the quotes,
    /// whether it holds quoted-pairs, whether it holds a byte above 127 (to check as UTF-8),
    /// and the index just past the closing quote, or nil when it is unterminated or holds a
    /// byte a quoted-string may not.
    private static func quotedString(_ bytes: UnsafeBufferPointer<UInt8>,
                                     openingQuoteAt start: Int) -> (Range<Int>, Bool, Bool, Int)? {
        var escaped = false
        var highBits: UInt8 = 0
        var index = start + 1
        let base = UnsafeRawPointer(bytes.baseAddress!)
        while index < bytes.count {
            // Eight bytes at a time while none needs a second look: nonces, cnonces and
            // responses make up most of a Digest header.
            while index &+ 8 <= bytes.count, isPlainQuotedWord(base.loadUnaligned(fromByteOffset: index, as: UInt64.self)) {
                index &+= 8
            }
            guard index < bytes.count else { break }
            let byte = bytes[index]
            highBits |= byte
            // qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text: an ordinary printable
            // byte passes the first test and goes round again.
            if byte > UInt8(ascii: "\\") ? byte != 0x7F : byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            if byte == UInt8(ascii: "\"") {
                return (start + 1..<index, escaped, highBits >= 0x80, index + 1)
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
                index += 1
                guard index < bytes.count else { return nil }
                let pair = bytes[index]
                highBits |= pair
                // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
                guard pair == 0x09 || pair >= 0x20 && pair != 0x7F else { return nil }
            } else if byte != 0x09 {
                return nil
            }
            index += 1
        }
        return nil
    }
}
