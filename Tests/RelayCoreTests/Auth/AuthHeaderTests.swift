import Testing
@testable import RelayCore

@Suite struct AuthHeaderTests {
    @Test func parsesSchemeAndToken68() throws {
        let basic = try ProxyAuthorization(parsing: "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        #expect(basic.hasScheme("basic") && basic.hasScheme("BASIC") && !basic.hasScheme("Digest"))
        #expect(basic.token68 == "QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        #expect(basic.parameters == nil)

        let bare = try ProxyAuthorization(parsing: "  Negotiate \t")
        #expect(bare.scheme == "Negotiate" && bare.credentials == .none)

        let spaced = try ProxyAuthorization(parsing: "NTLM   TlRMTVNTUAABAAAAB4IIAAAAAAAAAAAAAAAAAAAAAAA=")
        #expect(spaced.token68 == "TlRMTVNTUAABAAAAB4IIAAAAAAAAAAAAAAAAAAAAAAA=")
    }

    @Test func parsesAuthParamsWithQuotingAndEscapes() throws {
        let header = try ProxyAuthorization(parsing: #"Digest  username="Mu\"fa\\sa" , Realm = "a, b",nc=00000001,, qop=auth, empty="""#)
        let params = try #require(header.parameters)
        #expect(params["username"] == #"Mu"fa\sa"#)
        #expect(params["REALM"] == "a, b")
        #expect(params["nc"] == "00000001")
        #expect(params.parameter("qop")?.wasQuoted == false)
        #expect(params["empty"] == "")
        #expect(params.parameters.map(\.name) == ["username", "realm", "nc", "qop", "empty"])
        // obs-text is carried through when it is valid UTF-8.
        let utf8 = try ProxyAuthorization(parsing: "Digest username=\"Jäsøn\"")
        #expect(utf8.parameters?["username"] == "Jäsøn")
    }

    @Test(arguments: [
        "", "   ", "\"Basic\" abc", "Basic\tabc", "Ba(sic abc",          // scheme
        "Digest a=", "Digest =b", "Digest a=b c=d",             // structure (a= is token68 though)
        "Digest a=\"unterminated", "Digest a=\"bad\\", "Digest a=\"x\u{1}y\"", // quoted-string
        "Digest a=b,c", "Digest a=b;c=d", "Digest a=\"x\"y",
    ])
    func refusesMalformedValues(_ value: String) {
        if value == "Digest a=" {
            // A lone "a=" is a token68; Digest decoding then refuses it.
            #expect(throws: AuthError.malformedHeader) { try DigestCredentials(ProxyAuthorization(parsing: value)) }
            return
        }
        #expect(throws: AuthError.self) { try ProxyAuthorization(parsing: value) }
    }

    @Test func refusesDuplicateParametersWhateverTheirCase() {
        #expect(throws: AuthError.duplicateParameter("nonce")) {
            try ProxyAuthorization(parsing: #"Digest nonce="a", NONCE="b""#)
        }
    }

    @Test func boundsLengthAndParameterCount() throws {
        let long = "Basic " + String(repeating: "A", count: ProxyAuthorization.defaultMaxLength)
        #expect(throws: AuthError.tooLarge) { try ProxyAuthorization(parsing: long) }
        let many = "Digest " + (0..<33).map { "p\($0)=v" }.joined(separator: ", ")
        #expect(throws: AuthError.tooManyParameters) { try ProxyAuthorization(parsing: many) }
        let enough = "Digest " + (0..<32).map { "p\($0)=v" }.joined(separator: ", ")
        #expect(try ProxyAuthorization(parsing: enough).parameters?.parameters.count == 32)
    }

    @Test func valuesAreUnquotedAndUnescapedWhereverTheListStarts() throws {
        // The list is parsed from the middle of a buffer, as ProxyAuthorization hands it over.
        let buffer = Array(#"Digest response="ab\"c", nc=00000001"#.utf8)
        let params = try AuthParameters(parsing: buffer[7...], maxCount: 4)
        var seen: [(String, [UInt8])] = []
        params.forEachRaw { name, value in
            var copy: [UInt8] = []
            params.appendValue(value, to: &copy)
            seen.append((String(decoding: name, as: UTF8.self), copy))
        }
        #expect(seen.map(\.0) == ["response", "nc"])
        #expect(seen.map(\.1) == [Array(#"ab"c"#.utf8), Array("00000001".utf8)])
        #expect(params["RESPONSE"] == #"ab"c"#)
        #expect(params["cnonce"] == nil)
        // Lists compare by their parameters (name, value, quoting), not by spacing or case.
        let respaced = try AuthParameters(parsing: Array(#"RESPONSE = "ab\"c" ,nc=00000001"#.utf8)[...], maxCount: 4)
        #expect(params == respaced)
        let requoted = try AuthParameters(parsing: Array(#"response="ab\"c", nc="00000001""#.utf8)[...], maxCount: 4)
        #expect(params != requoted)
    }

    @Test func refusesInvalidUTF8InAnEscapedValueInsideABuffer() {
        // The bad byte follows a backslash, so it is checked after unescaping; the list starts
        // partway into the buffer, as ProxyAuthorization hands it over.
        let bytes = Array("Digest a=\"x\\".utf8) + [0xC3] + Array("\", b=c".utf8)
        #expect(throws: AuthError.badParameter("a")) { try AuthParameters(parsing: bytes[7...], maxCount: 4) }
        let valid = Array("Digest a=\"x\\".utf8) + [0xC3, 0xA9] + Array("\", b=c".utf8)
        #expect(throws: Never.self) { try AuthParameters(parsing: valid[7...], maxCount: 4) }
    }

    /// The byte classes as bit masks agree with the RFC's lists for every byte value.
    @Test func tokenAndToken68MasksMatchTheirDefinitions() {
        let token68 = Set(Array("-._~+/0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8))
        for byte in UInt8.min...UInt8.max {
            #expect(HTTPBytes.isTokenChar(byte) == PlainAuthParamParser.isTokenChar(byte), "byte \(byte)")
            #expect(AuthSyntax.isToken68Char(byte) == token68.contains(byte), "byte \(byte)")
        }
    }

    /// Every byte value at every position of a word otherwise plain or otherwise full of a
    /// byte that ends the fast path, then random words: the quoted-string word test agrees
    /// with its bytes (SP or VCHAR, neither `"` nor `\\`).
    @Test func plainQuotedWordAgreesWithItsBytes() {
        func isPlain(_ b: UInt8) -> Bool { b >= 0x20 && b <= 0x7E && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\") }
        let words = WordTestCases.words(fillers: [0x41, 0x20, 0x7E, 0x22, 0x5C, 0x21, 0x23, 0x5B, 0x5D, 0x00, 0x7F, 0x80],
                                        interesting: [0x22, 0x5C, 0x21, 0x23, 0x5B, 0x5D, 0x00, 0x09, 0x20, 0x7E, 0x7F, 0x80, 0xFF, 0x41],
                                        seed: 0x9D07E)
        for word in words {
            #expect(AuthParameters.isPlainQuotedWord(word) == WordTestCases.everyByte(of: word, isPlain), "word \(word)")
        }
    }

    /// The byte-level control check (Digest `username` and `uri`) agrees with the scalar
    /// one for every scalar up to U+07FF, alone and between letters.
    @Test func controlCheckOverBytesMatchesTheScalarCheck() {
        for value in UInt32(0)...0x7FF {
            let scalar = Unicode.Scalar(value)!
            for text in [String(Character(scalar)), "a\(Character(scalar))b"] {
                var utf8 = text
                let byBytes = utf8.withUTF8 { AuthSyntax.containsControl(utf8: UnsafeRawBufferPointer($0)) }
                let expected = text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || (0x80...0x9F).contains($0.value) }
                #expect(byBytes == expected, "U+\(String(value, radix: 16))")
            }
        }
        #expect(!AuthSyntax.containsControl("Jäsøn Doe") && AuthSyntax.containsControl("a\u{85}"))
    }

    @Test func refusesQuotedInvalidUTF8() {
        // A Swift String is always valid UTF-8, so the bad byte goes to the list parser as bytes.
        let bytes = Array("a=\"".utf8) + [0xC3] + Array("\"".utf8)
        #expect(throws: AuthError.badParameter("a")) { try AuthParameters(parsing: bytes[...], maxCount: 4) }
    }
}

@Suite struct AuthBasicTests {
    @Test func decodesRFC7617Example() throws {
        let credentials = try BasicCredentials(ProxyAuthorization(parsing: "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="))
        #expect(credentials.user == "Aladdin" && credentials.password == "open sesame")
        #expect(!credentials.description.contains("open sesame"))
        #expect(!String(reflecting: credentials).contains("open sesame"))
    }

    @Test func keepsColonsInThePasswordAndAcceptsUTF8() throws {
        let token = AuthCrypto.base64Encode(Array("tëst:pa:ss:".utf8))
        let credentials = try BasicCredentials(token68: token)
        #expect(credentials.user == "tëst" && credentials.password == "pa:ss:")
        #expect(try BasicCredentials(token68: AuthCrypto.base64Encode(Array("u:".utf8))).password == "")
    }

    @Test func refusesBadCredentials() {
        func token(_ bytes: [UInt8]) -> String { AuthCrypto.base64Encode(bytes) }
        #expect(throws: AuthError.badCredentials) { try BasicCredentials(token68: token(Array("nocolon".utf8))) }
        #expect(throws: AuthError.badCredentials) { try BasicCredentials(token68: token(Array(":pass".utf8))) }
        #expect(throws: AuthError.badUTF8) { try BasicCredentials(token68: token([0x75, 0xC3, 0x3A, 0x70])) }
        #expect(throws: AuthError.badUTF8) { try BasicCredentials(token68: token([0x75, 0x3A, 0xFF])) }
        #expect(throws: AuthError.controlCharacter) { try BasicCredentials(token68: token(Array("u\u{7}:p".utf8))) }
        #expect(throws: AuthError.controlCharacter) { try BasicCredentials(token68: token(Array("u:p\r\n".utf8))) }
        #expect(throws: AuthError.controlCharacter) { try BasicCredentials(token68: token(Array("u\u{85}:p".utf8))) }
        #expect(throws: AuthError.badBase64) { try BasicCredentials(token68: "dTpw=") }
        #expect(throws: AuthError.tooLarge) {
            try BasicCredentials(token68: token([UInt8](repeating: 0x61, count: 2000) + [0x3A]))
        }
        #expect(throws: AuthError.wrongScheme) { try BasicCredentials(ProxyAuthorization(parsing: "Digest dTpw")) }
        #expect(throws: AuthError.malformedHeader) { try BasicCredentials(ProxyAuthorization(parsing: "Basic")) }
        #expect(throws: AuthError.malformedHeader) { try BasicCredentials(ProxyAuthorization(parsing: "Basic a=b")) }
    }
}
