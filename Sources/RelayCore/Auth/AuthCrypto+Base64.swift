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
        // Straight from the string's own storage when it has one (every native String).
        let decoded = text.utf8.withContiguousStorageIfAvailable { encoded -> Result<[UInt8], AuthError> in
            do throws(AuthError) {
                return .success(try base64Decode(encoded, maxDecodedCount: maxDecodedCount))
            } catch {
                return .failure(error)
            }
        }
        switch decoded {
        case .success(let bytes)?: return bytes
        case .failure(let error)?: throw error
        case nil: return try base64Decode(utf8: Array(text.utf8), maxDecodedCount: maxDecodedCount)
        }
    }

    /// `base64Decode(_:maxDecodedCount:)` over the encoded bytes themselves.
    public static func base64Decode(utf8 encoded: [UInt8], maxDecodedCount: Int) throws(AuthError) -> [UInt8] {
        try encoded.withUnsafeBufferPointer { encoded throws(AuthError) in
            try base64Decode(encoded, maxDecodedCount: maxDecodedCount)
        }
    }

    /// Validates first, then decodes in Swift into the one output array: every login decodes
    /// a nonce or credentials, and going through EVP_DecodeBlock cost two more copies.
    private static func base64Decode(_ encoded: UnsafeBufferPointer<UInt8>, maxDecodedCount: Int) throws(AuthError) -> [UInt8] {
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

        // Every character is now known to be in the alphabet or final padding (value 0).
        return [UInt8](unsafeUninitializedCapacity: decodedCount) { out, count in
            var at = 0
            var index = 0
            while index < encoded.count {
                var group: UInt32 = 0
                for offset in 0..<4 {
                    group = group << 6 | UInt32(base64Value(encoded[index + offset]) ?? 0)
                }
                var shift: UInt32 = 16
                while at < decodedCount {
                    out[at] = UInt8(truncatingIfNeeded: group >> shift)
                    at += 1
                    if shift == 0 { break }
                    shift -= 8
                }
                index += 4
            }
            count = decodedCount
        }
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
