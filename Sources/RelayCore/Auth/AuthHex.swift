/// Lowercase hex, as Digest (RFC 7616 §3.4.1) and NTLM test vectors spell digests.
public enum AuthHex {
    /// Lowercase hex of `bytes`.
    public static func encode(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            bytes.withUnsafeBytes { write($0, into: UnsafeMutableRawBufferPointer(out)) }
            return bytes.count * 2
        }
    }

    /// Writes the lowercase hex of `bytes` into the first `2 * bytes.count` bytes of `out`.
    static func write(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count >= 2 * bytes.count)
        for (i, byte) in bytes.enumerated() {
            out[2 * i] = lowercaseDigit(byte >> 4)
            out[2 * i + 1] = lowercaseDigit(byte & 0x0F)
        }
    }

    private static func lowercaseDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// Decodes hex of either case; nil for odd lengths or non-hex characters.
    public static func decode(_ text: String) -> [UInt8]? {
        decode(Array(text.utf8)[...])
    }

    /// Decodes hex bytes of either case; nil for odd lengths or non-hex characters. Written
    /// straight into the result's storage: appending a byte at a time cost 0.4 µs for the
    /// 64 digits of every Digest response.
    public static func decode(_ utf8: ArraySlice<UInt8>) -> [UInt8]? {
        guard utf8.count % 2 == 0 else { return nil }
        var valid = true
        let length = utf8.count / 2
        let bytes = utf8.withUnsafeBytes { digits in
            // The buffer may be larger than asked for: `length` bounds the decode.
            [UInt8](unsafeUninitializedCapacity: length) { out, count in
                valid = decode(digits, into: UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(out)[..<length]))
                count = valid ? length : 0
            }
        }
        return valid ? bytes : nil
    }

    /// Decodes the even number of hex `digits` into the first half as many bytes of `out`;
    /// false at the first non-hex digit. `out` may start where `digits` does (a decode in
    /// place): digit pair i is read before byte i is written, and i ≤ 2i.
    static func decode(_ digits: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        precondition(digits.count % 2 == 0 && out.count >= digits.count / 2)
        var index = 0
        while index < digits.count / 2 {
            guard let high = nibble(digits[2 * index]), let low = nibble(digits[2 * index + 1]) else { return false }
            out[index] = high << 4 | low
            index += 1
        }
        return true
    }

    public static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
