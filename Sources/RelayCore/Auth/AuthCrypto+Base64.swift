import COpenSSL

extension AuthCrypto {
    /// Standard base64 (RFC 4648 §4) of `bytes`, padded, on one line.
    public static func base64Encode(_ bytes: [UInt8]) -> String {
        if bytes.isEmpty { return "" }
        precondition(bytes.count <= Int(Int32.max) / 4 * 3 - 3, "base64 input too large")
        let encodedCount = (bytes.count + 2) / 3 * 4
        var output = [UInt8](repeating: 0, count: encodedCount + 1)
        let written = output.withUnsafeMutableBufferPointer { out in
            EVP_EncodeBlock(out.baseAddress, bytes, Int32(bytes.count))
        }
        precondition(Int(written) == encodedCount)
        return String(decoding: output[0..<encodedCount], as: UTF8.self)
    }

    /// Decodes canonical standard base64 (RFC 4648 §4), refusing anything a lenient decoder
    /// would guess at: characters outside the alphabet (whitespace and the URL-safe `-_`
    /// included), a length that is not a multiple of four, padding anywhere but the last one
    /// or two places, non-zero bits under the padding (RFC 4648 §3.5), and input that would
    /// decode to more than `maxDecodedCount` bytes (checked before any decoding work).
    /// The empty string decodes to no bytes.
    public static func base64Decode(_ text: some StringProtocol, maxDecodedCount: Int) throws(AuthError) -> [UInt8] {
        try base64Decode(utf8: Array(text.utf8), maxDecodedCount: maxDecodedCount)
    }

    /// `base64Decode(_:maxDecodedCount:)` over the encoded bytes themselves.
    public static func base64Decode(utf8 encoded: [UInt8], maxDecodedCount: Int) throws(AuthError) -> [UInt8] {
        guard encoded.count % 4 == 0 else { throw .badBase64 }
        if encoded.isEmpty { return [] }
        // Without looking at padding, the output is at most 3/4 of the input.
        let upperBound = encoded.count / 4 * 3
        guard upperBound - 2 <= maxDecodedCount, encoded.count <= Int(Int32.max) else { throw .tooLarge }

        var padding = 0
        for (index, byte) in encoded.enumerated() {
            if byte == UInt8(ascii: "=") {
                guard index >= encoded.count - 2 else { throw .badBase64 }
                padding += 1
            } else {
                guard padding == 0, base64Value(byte) != nil else { throw .badBase64 }
            }
        }
        // "x===" or "x=x=": a lone '=' before a data character was caught above; two '='
        // must be the final two characters, which the index check guarantees.
        let decodedCount = upperBound - padding
        guard decodedCount <= maxDecodedCount else { throw .tooLarge }
        if padding > 0 {
            // The last data character carries 2 (one '=') or 4 (two '=') bits that are
            // not part of the output; canonical encodings leave them zero.
            let lastData = base64Value(encoded[encoded.count - 1 - padding])!
            let unusedMask: UInt8 = padding == 1 ? 0b11 : 0b1111
            guard lastData & unusedMask == 0 else { throw .badBase64 }
        }

        var output = [UInt8](repeating: 0, count: upperBound + 1)
        let written = output.withUnsafeMutableBufferPointer { out in
            EVP_DecodeBlock(out.baseAddress, encoded, Int32(encoded.count))
        }
        // EVP_DecodeBlock counts padding as zero bytes; the validation above makes any
        // other result impossible.
        guard Int(written) == upperBound else { throw .badBase64 }
        return Array(output[0..<decodedCount])
    }

    private static func base64Value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
