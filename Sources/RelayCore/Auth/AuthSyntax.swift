/// Byte-level pieces of the HTTP authentication grammar (RFC 9110 §5.6, §11) shared by the
/// header, auth-param and Basic parsers.
enum AuthSyntax {
    /// Strict UTF-8 (nil when invalid) with HTTPBytes' ASCII fast path: `String(validating:)`
    /// on a slice costs about twice `String(decoding:)` even for ASCII (a dynamic cast and a
    /// second pass), and it runs for every Digest parameter and every Basic login.
    static func utf8String(_ bytes: ArraySlice<UInt8>) -> String? {
        bytes.withUnsafeBytes { HTTPBytes.string($0) }
    }

    /// token68 characters before the trailing `=`: ALPHA, DIGIT, `-._~+/`.
    static func isToken68Char(_ byte: UInt8) -> Bool {
        HTTPBytes.inSet(byte, low: 0x03FF_E800_0000_0000, high: 0x47FF_FFFE_87FF_FFFE)
    }

    /// OWS / BWS: SP or HTAB.
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09
    }

    /// True when every byte of `bytes` is a token68 character, optionally followed by `=`s,
    /// and there is at least one character before them.
    static func isToken68(_ bytes: ArraySlice<UInt8>) -> Bool {
        var index = bytes.startIndex
        while index < bytes.endIndex, isToken68Char(bytes[index]) { index += 1 }
        guard index > bytes.startIndex else { return false }
        while index < bytes.endIndex, bytes[index] == UInt8(ascii: "=") { index += 1 }
        return index == bytes.endIndex
    }

    /// Lowercases ASCII letters only: scheme and parameter names are ASCII tokens, and
    /// locale-aware lowercasing would make `I` something else in some locales.
    static func asciiLowercased(_ text: String) -> String {
        String(decoding: text.utf8.map(HTTPBytes.asciiLowercased), as: UTF8.self)
    }

    /// True when `bytes` spell `lowercase` (a lowercase ASCII literal), ignoring ASCII case.
    static func equalsIgnoringCase(_ bytes: ArraySlice<UInt8>, _ lowercase: StaticString) -> Bool {
        bytes.withUnsafeBytes { equalsIgnoringCase($0, lowercase) }
    }

    /// True when `a` and `b` hold the same UTF-8 bytes. String's `==` would also accept
    /// canonically equivalent spellings, and `utf8.elementsEqual` walks both views through
    /// generic iterators: this compares the contiguous bytes (a Digest request checks three),
    /// in constant time as it happens.
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        var a = a
        return a.withUTF8 { sameBytes(UnsafeRawBufferPointer($0), b) }
    }

    /// True when `text` contains a C0 control, DEL or a C1 control.
    static func containsControl(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { containsControl(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// `containsControl` over valid UTF-8, without a String: a C1 control is encoded as
    /// 0xC2 followed by 0x80–0x9F, and no other scalar's encoding holds that pair.
    static func containsControl(utf8 bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x20 || byte == 0x7F { return true }
            if byte == 0xC2, index + 1 < bytes.count, bytes[index + 1] >= 0x80 && bytes[index + 1] <= 0x9F { return true }
            index += 1
        }
        return false
    }

    /// True when `a` and `b` hold the same bytes, compared in constant time.
    static func sameBytes(_ a: UnsafeRawBufferPointer, _ b: String) -> Bool {
        guard a.count == b.utf8.count else { return false }
        var b = b
        return b.withUTF8 { AuthCrypto.constantTimeEquals(a, UnsafeRawBufferPointer($0)) }
    }

    /// True when `bytes` spell `lowercase` (a lowercase ASCII literal), ignoring ASCII case.
    static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
        return HTTPBytes.equalsIgnoringASCIICase(bytes.assumingMemoryBound(to: UInt8.self), expected)
    }
}
