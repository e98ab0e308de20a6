import Testing
@testable import RelayCore

/// PBKDF2-SHA256 verifiers: a known answer, round trips and strict parsing.
@Suite struct PasswordVerifierTests {
    @Test func knownAnswerMatchesPythonHashlib() {
        // hashlib.pbkdf2_hmac('sha256', b'correct horse', b'0123456789abcdef', 1000), base64.
        let verifier = PasswordVerifier(password: "correct horse", salt: Array("0123456789abcdef".utf8), iterations: 1000)
        #expect(verifier.encoded == "pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZg==$cBg8D2DungRB9k76szThf5ehfyBz991ay6PT8Srwk4M=")
        #expect(verifier.verify("correct horse"))
        #expect(!verifier.verify("correct horsE"))
        #expect(!verifier.verify(""))
    }

    @Test func roundTripsThroughTheEncodedForm() throws {
        let verifier = PasswordVerifier(password: "pä$$wörd:with:colons", iterations: 1000)
        let parsed = try #require(PasswordVerifier(encoded: verifier.encoded))
        #expect(parsed == verifier)
        #expect(parsed.iterations == 1000)
        #expect(parsed.verify("pä$$wörd:with:colons"))
        #expect(!parsed.verify("pä$$wörd:with:colon"))
        #expect(PasswordVerifier(password: "x", iterations: 1000) != PasswordVerifier(password: "x", iterations: 1000),
                "fresh salt each time")
        #expect(PasswordVerifier.defaultIterations == 210_000)
    }

    @Test func descriptionNamesOnlySchemeAndCost() {
        let verifier = PasswordVerifier(password: "secret", salt: Array("0123456789abcdef".utf8), iterations: 1000)
        #expect("\(verifier)" == "pbkdf2-sha256 (1000 iterations)")
    }

    static let salt = "MDEyMzQ1Njc4OWFiY2RlZg=="
    static let hash = "cBg8D2DungRB9k76szThf5ehfyBz991ay6PT8Srwk4M="

    static let malformed: [String] = [
        "",
        "pbkdf2-sha256",
        "pbkdf2-sha256$1000$\(salt)",
        "pbkdf2-sha256$1000$\(salt)$\(hash)$",
        "pbkdf2-sha256$1000$\(salt)$\(hash)$extra",
        "PBKDF2-SHA256$1000$\(salt)$\(hash)",
        "pbkdf2-sha512$1000$\(salt)$\(hash)",
        "pbkdf2_sha256$1000$\(salt)$\(hash)",
        "pbkdf2-sha256$999$\(salt)$\(hash)",
        "pbkdf2-sha256$1$\(salt)$\(hash)",
        "pbkdf2-sha256$0$\(salt)$\(hash)",
        "pbkdf2-sha256$01000$\(salt)$\(hash)",
        "pbkdf2-sha256$+1000$\(salt)$\(hash)",
        "pbkdf2-sha256$-1000$\(salt)$\(hash)",
        "pbkdf2-sha256$ 1000$\(salt)$\(hash)",
        "pbkdf2-sha256$1e4$\(salt)$\(hash)",
        "pbkdf2-sha256$10000001$\(salt)$\(hash)",
        "pbkdf2-sha256$99999999999999999999$\(salt)$\(hash)",
        "pbkdf2-sha256$$\(salt)$\(hash)",
        "pbkdf2-sha256$1000$$\(hash)",
        "pbkdf2-sha256$1000$\(salt)$",
        "pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZg$\(hash)",      // unpadded
        "pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZh==$\(hash)",    // non-zero pad bits
        "pbkdf2-sha256$1000$MDEy MzQ1Njc4OWFiY2RlZg==$\(hash)",
        "pbkdf2-sha256$1000$MDEyMzQ1Ng==$\(hash)",                // 7-byte salt
        "pbkdf2-sha256$1000$\(salt)$cBg8D2DungRB9k76szThf5ehfyBz991ay6PT8Srwk4M",
        "pbkdf2-sha256$1000$\(salt)$cBg8D2DungRB9k76szThf5ehfyBz991ay6PT8Srw",  // 30 bytes
        "pbkdf2-sha256$1000$\(salt)$\(hash)AAAA",                 // 35 bytes
        "pbkdf2-sha256$1000$\(salt)$\(hash)\n",
        " pbkdf2-sha256$1000$\(salt)$\(hash)",
    ]

    @Test("malformed verifiers are refused", arguments: 0..<malformed.count)
    func refusesMalformed(_ index: Int) {
        #expect(PasswordVerifier(encoded: Self.malformed[index]) == nil, "\(Self.malformed[index])")
    }

    @Test func acceptsTheBoundsOfTheRanges() {
        #expect(PasswordVerifier(encoded: "pbkdf2-sha256$1000$\(Self.salt)$\(Self.hash)") != nil)
        #expect(PasswordVerifier(encoded: "pbkdf2-sha256$10000000$\(Self.salt)$\(Self.hash)") != nil)
        #expect(PasswordVerifier(encoded: "pbkdf2-sha256$1000$AAAAAAAAAAA=$\(Self.hash)") != nil, "8-byte salt")
    }
}
