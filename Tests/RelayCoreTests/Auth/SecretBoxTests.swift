import Testing
@testable import RelayCore

/// AES-256-GCM sealing: the NIST vector through the raw cipher, then the box format and
/// every way a sealed value can be altered.
@Suite struct SecretBoxTests {
    static let key = [UInt8](0..<32)
    static let box = SecretBox(key: key)!

    @Test func rawCipherMatchesGCMSpecTestCase16() {
        // McGrew & Viega, "The Galois/Counter Mode of Operation", test case 16 (256-bit key,
        // 96-bit IV, associated data); the same values are in NIST's gcmEncryptExtIV256.
        let key = AuthVectors.bytes("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let plaintext = AuthVectors.bytes("""
            d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72\
            1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39
            """)
        let aad = AuthVectors.bytes("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let iv = AuthVectors.bytes("cafebabefacedbaddecaf888")
        let sealed = SecretBox.encrypt(key: key, nonce: iv, associatedData: aad, plaintext: plaintext)
        #expect(sealed.ciphertext == AuthVectors.bytes("""
            522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa\
            8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662
            """))
        #expect(sealed.tag == AuthVectors.bytes("76fc6ece0f4e1768cddf8853bb2d551b"))
        #expect(SecretBox.decrypt(key: key, nonce: iv, associatedData: aad,
                                  ciphertext: sealed.ciphertext, tag: sealed.tag) == plaintext)
    }

    @Test func rawCipherMatchesGCMSpecTestCase13EmptyEverything() {
        let zeroKey = [UInt8](repeating: 0, count: 32)
        let zeroIV = [UInt8](repeating: 0, count: 12)
        let sealed = SecretBox.encrypt(key: zeroKey, nonce: zeroIV, associatedData: [], plaintext: [])
        #expect(sealed.ciphertext.isEmpty)
        #expect(sealed.tag == AuthVectors.bytes("530f8afbc74536b9a963b4f1c4cb738b"))
    }

    @Test func sealedFormatIsVersionNonceCiphertextTag() {
        let nonce = [UInt8](repeating: 0xab, count: 12)
        let plaintext = Array("ha1 bytes".utf8)
        let sealed = Self.box.seal(plaintext, associatedData: Array("alice\u{0}ha1".utf8), nonce: nonce)
        #expect(sealed.count == plaintext.count + SecretBox.overhead)
        #expect(sealed[0] == 1)
        #expect(Array(sealed[1..<13]) == nonce)
        // The version byte is authenticated as a prefix of the associated data.
        let raw = SecretBox.encrypt(key: Self.key, nonce: nonce, associatedData: [1] + Array("alice\u{0}ha1".utf8),
                                    plaintext: plaintext)
        #expect(Array(sealed[13...]) == raw.ciphertext + raw.tag)
    }

    @Test func roundTripsWithFreshNonces() {
        for length in [0, 1, 15, 16, 17, 32, 1000] {
            let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let a = Self.box.seal(plaintext, associatedData: [9])
            let b = Self.box.seal(plaintext, associatedData: [9])
            #expect(a != b, "each seal draws its own nonce")
            #expect(Self.box.open(a, associatedData: [9]) == plaintext)
            #expect(Self.box.open(b, associatedData: [9]) == plaintext)
        }
    }

    @Test func everyFlippedBitFailsClosed() {
        let sealed = Self.box.seal(Array("0123456789abcdef".utf8), associatedData: Array("bob".utf8))
        for index in sealed.indices {
            for bit in 0..<8 {
                var tampered = sealed
                tampered[index] ^= 1 << bit
                #expect(Self.box.open(tampered, associatedData: Array("bob".utf8)) == nil, "byte \(index) bit \(bit)")
            }
        }
    }

    @Test func truncationExtensionWrongKeyAndWrongDataFailClosed() {
        let aad = Array("alice\u{0}nt_hash".utf8)
        let sealed = Self.box.seal(Array(repeating: 7, count: 16), associatedData: aad)
        for count in 0..<sealed.count {
            #expect(Self.box.open(Array(sealed.prefix(count)), associatedData: aad) == nil, "truncated to \(count)")
        }
        #expect(Self.box.open(sealed + [0], associatedData: aad) == nil)
        #expect(Self.box.open(sealed, associatedData: Array("alice\u{0}ha1_md5".utf8)) == nil, "another column")
        #expect(Self.box.open(sealed, associatedData: Array("mallory\u{0}nt_hash".utf8)) == nil, "another row")
        #expect(Self.box.open(sealed, associatedData: []) == nil)
        let otherKey = SecretBox(key: [UInt8](repeating: 1, count: 32))!
        #expect(otherKey.open(sealed, associatedData: aad) == nil)
        var otherVersion = sealed
        otherVersion[0] = 2
        #expect(Self.box.open(otherVersion, associatedData: aad) == nil)
    }

    @Test func keyMustBe32BytesAndNeverPrints() {
        #expect(SecretBox(key: []) == nil)
        #expect(SecretBox(key: [UInt8](repeating: 0, count: 31)) == nil)
        #expect(SecretBox(key: [UInt8](repeating: 0, count: 33)) == nil)
        let box = SecretBox(key: [UInt8](repeating: 0x41, count: 32))!
        var dumped = ""
        dump(box, to: &dumped)
        for text in ["\(box)", String(reflecting: box), dumped] {
            #expect(!text.contains("65") && !text.contains("AAAA"), "\(text)")
        }
    }
}
