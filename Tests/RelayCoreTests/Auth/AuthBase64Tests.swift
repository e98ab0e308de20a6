import Testing
@testable import RelayCore

@Suite struct AuthBase64Tests {
    /// RFC 4648 §10.
    static let vectors = [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
                          ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")]

    @Test func encodesAndDecodesRFC4648Vectors() throws {
        for (plain, encoded) in Self.vectors {
            #expect(AuthCrypto.base64Encode(Array(plain.utf8)) == encoded)
            #expect(try AuthCrypto.base64Decode(encoded, maxDecodedCount: 16) == Array(plain.utf8))
        }
    }

    @Test func roundTripsEveryLengthAndByte() throws {
        var rng = SplitMix64(state: 0xB64)
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let encoded = AuthCrypto.base64Encode(bytes)
            #expect(try AuthCrypto.base64Decode(encoded, maxDecodedCount: length) == bytes)
            if length > 0 {
                #expect(throws: AuthError.tooLarge) { try AuthCrypto.base64Decode(encoded, maxDecodedCount: length - 1) }
            }
        }
    }

    @Test(arguments: [
        "Zg=", "Zg", "Z", "Zm9vY", // length not a multiple of 4
        "Zm9v YmFy", " Zm9v", "Zm9v\n", "Zm9v\r\nYmFy", // whitespace
        "Zm-v", "Zm_v", "Zm9v*mFy", "Zm9vä===", // outside the alphabet
        "====", "Z===", "Zg=a", "Z=g=", "Zm=v", "Zg==Zg==", "=Zm9", // misplaced padding
        "Zh==", "Zm9=", "Zm+=", // non-zero bits under the padding
    ])
    func refusesNonCanonicalInput(_ text: String) {
        #expect(throws: AuthError.badBase64) { try AuthCrypto.base64Decode(text, maxDecodedCount: 64) }
    }

    @Test func refusesOversizeBeforeLookingAtCharacters() throws {
        let huge = String(repeating: "!", count: 4000)
        #expect(throws: AuthError.tooLarge) { try AuthCrypto.base64Decode(huge, maxDecodedCount: 100) }
        #expect(throws: AuthError.tooLarge) { try AuthCrypto.base64Decode("Zm9vYmFy", maxDecodedCount: 5) }
        #expect(try AuthCrypto.base64Decode("Zm9vYmE=", maxDecodedCount: 5) == Array("fooba".utf8))
    }
}
