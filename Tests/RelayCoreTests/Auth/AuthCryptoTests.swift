import Testing
@testable import RelayCore

/// Known-answer tests for the OpenSSL-backed primitives, from their defining RFCs.
@Suite struct AuthCryptoTests {
    @Test func digestsMatchRFCVectors() {
        let abc = Array("abc".utf8)
        #expect(AuthCrypto.isLegacyAvailable)
        // RFC 1320 §A.5, RFC 1321 §A.5, FIPS 180-2 appendix B.1.
        #expect(AuthCrypto.md4(abc) == AuthVectors.bytes("a448017aaf21d8525fc10ae87aa6729d"))
        #expect(AuthCrypto.md4([]) == AuthVectors.bytes("31d6cfe0d16ae931b73c59d7e0c089c0"))
        #expect(AuthCrypto.md5(abc) == AuthVectors.bytes("900150983cd24fb0d6963f7d28e17f72"))
        #expect(AuthCrypto.sha256(abc) == AuthVectors.bytes("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }

    @Test func hmacsMatchRFCVectors() {
        let key = Array("Jefe".utf8)
        let data = Array("what do ya want for nothing?".utf8)
        // RFC 2202 §2 test case 2; RFC 4231 §4.3 test case 2.
        #expect(AuthCrypto.hmacMD5(key: key, data: data) == AuthVectors.bytes("750c783e6ab0b503eaa86e310a5db738"))
        #expect(AuthCrypto.hmacSHA256(key: key, data: data)
            == AuthVectors.bytes("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
        // RFC 2202 test case 6: a key longer than the block is hashed first.
        #expect(AuthCrypto.hmacMD5(key: [UInt8](repeating: 0xaa, count: 80),
                                   data: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
            == AuthVectors.bytes("6b1ab7fe4bd7bf8f0b62e6ce61b9d0cd"))
        // Empty key: HMAC-SHA256("", "") computed with Python's hmac module.
        #expect(AuthCrypto.hmacSHA256(key: [], data: [])
            == AuthVectors.bytes("b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"))
    }

    /// The pooled, pre-keyed MAC gives RFC 4231's answer on first and repeated use, splits
    /// its input anywhere, and agrees with the one-shot HMAC from many threads at once.
    @Test func keyedHMACMatchesTheOneShotHMAC() async {
        let jefe = KeyedHMAC(key: Array("Jefe".utf8))
        let expected = AuthVectors.bytes("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let data = Array("what do ya want for nothing?".utf8)
        for split in 0...data.count {
            #expect(jefe.mac(Array(data[..<split]), Array(data[split...])) == expected, "split at \(split)")
        }
        #expect(KeyedHMAC(key: []).mac([])
            == AuthVectors.bytes("b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"))
        let key = AuthCrypto.randomBytes(count: 32)
        let shared = KeyedHMAC(key: key)
        let agreed = await withTaskGroup(of: Bool.self) { group in
            for task in 0..<16 {
                group.addTask {
                    (0..<200).allSatisfy { i in
                        let message = Array("message \(task) \(i)".utf8)
                        return shared.mac(message) == AuthCrypto.hmacSHA256(key: key, data: message)
                    }
                }
            }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(agreed)
    }

    @Test func pbkdf2MatchesRFC7914() {
        // RFC 7914 §11, PBKDF2-HMAC-SHA256 with P="passwd", S="salt", c=1, dkLen=64.
        let derived = AuthCrypto.pbkdf2SHA256(password: Array("passwd".utf8), salt: Array("salt".utf8), iterations: 1, length: 64)
        #expect(derived == AuthVectors.bytes("""
            55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc\
            49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783
            """))
        // Same KDF, c=80000, from RFC 7914 §11's second PBKDF2 vector, truncated to 32 bytes.
        let slow = AuthCrypto.pbkdf2SHA256(password: Array("Password".utf8), salt: Array("NaCl".utf8), iterations: 80000, length: 32)
        #expect(slow == AuthVectors.bytes("4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"))
        #expect(AuthCrypto.pbkdf2SHA256(password: [], salt: [], iterations: 1, length: 16).count == 16)
    }

    @Test func constantTimeEqualsComparesBytesAndLengths() {
        #expect(AuthCrypto.constantTimeEquals([], []))
        #expect(AuthCrypto.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!AuthCrypto.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!AuthCrypto.constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(!AuthCrypto.constantTimeEquals([], [0]))
    }

    @Test func randomBytesHaveTheLengthAskedAndDiffer() {
        #expect(AuthCrypto.randomBytes(count: 0).isEmpty)
        let a = AuthCrypto.randomBytes(count: 32)
        let b = AuthCrypto.randomBytes(count: 32)
        #expect(a.count == 32 && b.count == 32 && a != b)
    }

    @Test func hexDecodesEitherCaseAndRefusesAnythingElse() {
        let bytes: [UInt8] = [0x00, 0x7f, 0x80, 0xab, 0xff]
        #expect(AuthHex.decode(AuthHex.encode(bytes)) == bytes)
        #expect(AuthHex.decode("007F80ABff") == bytes)
        #expect(AuthHex.decode("") == [])
        // "\u{e9}" is two UTF-8 bytes (C3 A9): an even length of non-hex bytes.
        for bad in ["0", "abc", "g0", "0g", "00 1", "0-", "\u{e9}0", "\u{e9}", "00\u{e9}"] {
            #expect(AuthHex.decode(bad) == nil, "\(bad)")
        }
        // A slice from the middle of a buffer, as a Digest response arrives.
        let buffer = Array("response=00ff;".utf8)
        #expect(AuthHex.decode(buffer[9..<13]) == [0x00, 0xff])
    }
}
