/// Lowercase hex, as Digest (RFC 7616 §3.4.1) and NTLM test vectors spell digests.
public enum AuthHex {

    /// The lowercase hex digit of a nibble (0...15).
    static func lowercaseDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// Lowercase hex of `bytes`.
    public static func encode(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            for (i, byte) in bytes.enumerated() {
                out[2 * i] = lowercaseDigit(byte >> 4)
                out[2 * i + 1] = lowercaseDigit(byte & 0x0F)
            }
            return bytes.count * 2
        }
    }

    /// Decodes hex of either case; nil for odd lengths or non-hex characters.
    public static func decode(_ text: String) -> [UInt8]? {
        decode(Array(text.utf8)[...])
    }

    /// Decodes hex bytes of either case; nil for odd lengths or non-hex characters.
    public static func decode(_ utf8: ArraySlice<UInt8>) -> [UInt8]? {
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = utf8.startIndex
        while index < utf8.endIndex {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
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
