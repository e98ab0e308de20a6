import Testing
@testable import RelayCore

/// Finding NTLM inside SPNEGO: real tokens from Samba's own client and server
/// (`ntlm_auth --helper-protocol=gss-spnego-client` and `gss-spnego`), DER built here, and
/// hostile framing, which must name nobody rather than trap or guess.
@Suite struct SPNEGOTokenTests {
    /// Samba's client: its first message, a NegTokenInit carrying an NTLM NEGOTIATE.
    static let sambaInit = try! AuthCrypto.base64Decode(
        "YEgGBisGAQUFAqA+MDygDjAMBgorBgEEAYI3AgIKoioEKE5UTE1TU1AAAQAAAAWCCGIAAAAAKAAAAAAAAAAoAAAABgEAAAAAAA8=",
        maxDecodedCount: 4096)
    /// Samba's server: a NegTokenResp carrying the CHALLENGE.
    static let sambaChallenge = try! AuthCrypto.base64Decode(
        "oYGBMH+gAwoBAaEMBgorBgEEAYI3AgIKomoEaE5UTE1TU1AAAgAAAAQABAA4AAAABYKKYqC70X0izKBJAAAAAAAAAAAsACwAPAAAAAYBAAAAAAAPVgBNAAIABABWAE0AAQAEAFYATQAEAAAAAwAEAHYAbQAHAAgA9OnWoJmB3QEAAAAA", maxDecodedCount: 4096)
    /// Samba's client answering it for `grace`: a NegTokenResp (long-form lengths) carrying
    /// the AUTHENTICATE.
    static let sambaAuthenticate = try! AuthCrypto.base64Decode("""
        oYIBTjCCAUqiggFGBIIBQk5UTE1TU1AAAwAAABgAGABYAAAAoACgAHAAAAAYABgAEAEAAAoACgAoAQAAAAAAADIBAAAQABAAMgEAAAWCCGIGAQAAAAAAD9v0ZS\
        Rfy5z86QFrZKLrVCIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABUWgR9X4aB+adqYdUP8i4mAQEAAAAAAAD06dagmYHdAbI3DySrYK8RAAAAAAIABABWAE0AAQAE\
        AFYATQAEAAAAAwAEAHYAbQAHAAgA9OnWoJmB3QEIADAAMAAAAAAAAAAAAAAAAAAAACvn9QkYiGFjFebJqjwVrGcadykNquKnJ/F+tTkwO1rHCgAQAAAAAAAAAAAA\
        AAAAAAAAAAAAAAAARABZAE4AUgBFAEwAQQBZAFQARQBTAFQAZwByAGEAYwBlAKG0WBt6VM4KeG9JJrLcA24=
        """, maxDecodedCount: 4096)

    /// One DER element; lengths in the shortest form, as DER requires.
    static func der(_ tag: UInt8, _ value: [UInt8]) -> [UInt8] {
        var length: [UInt8] = []
        if value.count < 0x80 {
            length = [UInt8(value.count)]
        } else {
            var count = value.count
            while count > 0 { length.insert(UInt8(count & 0xFF), at: 0); count >>= 8 }
            length.insert(0x80 | UInt8(length.count), at: 0)
        }
        return [tag] + length + value
    }

    /// A bare NegTokenResp with these context fields (number, content) in the given order.
    static func negTokenResp(_ fields: [(UInt8, [UInt8])]) -> [UInt8] {
        der(0xA1, der(0x30, fields.flatMap { der(0xA0 | $0.0, $0.1) }))
    }

    static let acceptIncomplete = der(0x0A, [1])

    @Test func findsTheNTLMMessagesInSambasTokens() throws {
        let negotiate = try #require(SPNEGOToken.mechanismToken(in: Self.sambaInit))
        #expect(negotiate.starts(with: Array("NTLMSSP".utf8) + [0, 1]))
        let challenge = try #require(SPNEGOToken.mechanismToken(in: Self.sambaChallenge))
        #expect(challenge.starts(with: Array("NTLMSSP".utf8) + [0, 2]))
        let authenticate = try #require(SPNEGOToken.mechanismToken(in: Self.sambaAuthenticate))
        #expect(authenticate.count == 0x142)

        #expect(NTLMAuthenticateMessage.claim(inNegotiateToken: Self.sambaInit) == .notAuthenticate)
        #expect(NTLMAuthenticateMessage.claim(inNegotiateToken: Self.sambaAuthenticate) == .user("grace"))
    }

    @Test func readsBareNTLMAndNamesNobodyForKerberos() {
        let bare = AuthNTLMTests.chromiumAuthenticate
        #expect(NTLMAuthenticateMessage.claim(inNegotiateToken: bare) == .user("User"))
        #expect(NTLMAuthenticateMessage.claim(inNegotiateToken: Self.negTokenResp([(2, Self.der(0x04, bare))])) == .user("User"))
        // A Kerberos AP-REQ in the InitialContextToken framing (krb5 OID 1.2.840.113554.1.2.2).
        let krb5 = Self.der(0x60, Self.der(0x06, [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x12, 0x01, 0x02, 0x02]) + [0x01, 0x00]
            + Self.der(0x6E, Array(repeating: 0x41, count: 200)))
        #expect(SPNEGOToken.mechanismToken(in: krb5) == nil)
        #expect(NTLMAuthenticateMessage.claim(inNegotiateToken: krb5) == .notAuthenticate)
        // SPNEGO around Kerberos: a mechanism token, but not NTLM.
        let wrapped = Self.negTokenResp([(0, Self.acceptIncomplete), (2, Self.der(0x04, Array(krb5)))])
        #expect(SPNEGOToken.mechanismToken(in: wrapped).map(Array.init) == krb5)
        #expect(NTLMAuthenticateMessage.claim(inNegotiateToken: wrapped) == .notAuthenticate)
        // A response with no mechanism token (the final accept-completed).
        #expect(SPNEGOToken.mechanismToken(in: Self.negTokenResp([(0, Self.der(0x0A, [0]))])) == nil)
    }

    /// An AUTHENTICATE this relay refuses stays refused when wrapped: a helper must not get it.
    @Test func aMalformedAuthenticateInsideIsMalformed() {
        var padded = AuthNTLMTests.chromiumAuthenticate + [UInt8](repeating: 0, count: NTLMAuthenticateMessage.maxResponseLength)
        let length = UInt16(138 + NTLMAuthenticateMessage.maxResponseLength)
        padded[20] = UInt8(truncatingIfNeeded: length); padded[21] = UInt8(truncatingIfNeeded: length >> 8)
        padded[22] = padded[20]; padded[23] = padded[21]
        #expect(NTLMAuthenticateMessage.claim(inNegotiateToken: Self.negTokenResp([(2, Self.der(0x04, padded))])) == .malformed)
        #expect(NTLMAuthenticateMessage.claim(inNegotiateToken: padded) == .malformed)
    }

    @Test func refusesWhatIsNotDER() {
        let inner = Self.der(0x04, AuthNTLMTests.chromiumAuthenticate)
        let good = Self.negTokenResp([(0, Self.acceptIncomplete), (2, inner)])
        #expect(SPNEGOToken.mechanismToken(in: good) != nil)
        #expect(SPNEGOToken.mechanismToken(in: Self.der(0x60, Self.der(0x06, SPNEGOToken.oid)
            + Self.der(0xA0, Self.der(0x30, Self.der(0xA2, inner))))) != nil)
        var hostile: [String: [UInt8]] = [
            "trailing byte": good + [0],
            "field [2] twice": Self.negTokenResp([(2, inner), (2, Self.der(0x04, [1, 2, 3]))]),
            "fields out of order": Self.negTokenResp([(2, inner), (0, Self.acceptIncomplete)]),
            "field [4]": Self.negTokenResp([(2, inner), (4, [0x05, 0x00])]),
            "primitive context tag": Self.der(0xA1, Self.der(0x30, Self.der(0x82, inner))),
            "not an OCTET STRING": Self.negTokenResp([(2, Self.der(0x03, AuthNTLMTests.chromiumAuthenticate))]),
            "two elements in [2]": Self.negTokenResp([(2, inner + Self.der(0x04, []))]),
            "not a SEQUENCE": Self.der(0xA1, Self.der(0x31, Self.der(0xA2, inner))),
            "indefinite length": [0xA1, 0x80] + Self.der(0x30, Self.der(0xA2, inner)) + [0, 0],
            "multi-byte tag": [0xBF, 0x01] + Array(good.dropFirst()),
            "wrong mechanism OID": Self.der(0x60, Self.der(0x06, [0x2B, 0x06, 0x01, 0x05, 0x05, 0x03])
                + Self.der(0xA0, Self.der(0x30, Self.der(0xA2, inner)))),
            "NegTokenResp choice in the framing": Self.der(0x60, Self.der(0x06, SPNEGOToken.oid) + Self.der(0xA1, Self.der(0x30, Self.der(0xA2, inner)))),
            "bytes after the SEQUENCE": Self.der(0xA1, Self.der(0x30, Self.der(0xA2, inner)) + [0x05, 0x00]),
            "bytes after the NegTokenInit": Self.der(0x60, Self.der(0x06, SPNEGOToken.oid)
                + Self.der(0xA0, Self.der(0x30, Self.der(0xA2, inner))) + [0x05, 0x00]),
            "empty": [],
        ]
        // Lengths DER forbids: a long form where the short one fits, a leading zero byte, five bytes.
        let small = Self.der(0x30, Self.der(0xA2, Self.der(0x04, [1, 2, 3])))
        #expect(SPNEGOToken.mechanismToken(in: Self.der(0xA1, small)) == [1, 2, 3])
        hostile["needless long form"] = [0xA1, 0x81, UInt8(small.count)] + small
        let large = Array(good.dropFirst(2 + Int(good[1] & 0x7F)))
        hostile["leading zero length byte"] = [0xA1, 0x83, 0x00, UInt8(large.count >> 8), UInt8(large.count & 0xFF)] + large
        hostile["five length bytes"] = [0xA1, 0x85, 0, 0, 0, UInt8(large.count >> 8), UInt8(large.count & 0xFF)] + large
        for (name, token) in hostile {
            #expect(SPNEGOToken.mechanismToken(in: token) == nil, "\(name)")
            // Each still carries an NTLM message this reader cannot reach: refused, not passed on.
            let carriesNTLM = !name.hasPrefix("needless") && name != "empty"
            #expect(NTLMAuthenticateMessage.claim(inNegotiateToken: token) == (carriesNTLM ? .malformed : .notAuthenticate),
                    "\(name)")
        }
    }

    /// Every prefix of a real token is cut inside some element: none is read.
    @Test func noTruncationIsRead() {
        for token in [Self.sambaInit, Self.sambaChallenge, Self.sambaAuthenticate] {
            for count in 0..<token.count {
                #expect(SPNEGOToken.mechanismToken(in: Array(token.prefix(count))) == nil, "prefix \(count)")
            }
        }
    }

    @Test func mutatedTokensNeverTrap() {
        var rng = SplitMix64(state: 0x5E6E60)
        var found = 0
        for iteration in 0..<AuthFuzzTests.iterations {
            let seed = [Self.sambaInit, Self.sambaChallenge, Self.sambaAuthenticate][iteration % 3]
            let token = AuthFuzzTests.mutate(seed, &rng, interestingBytes: [0x00, 0x04, 0x30, 0x60, 0x7F, 0x80, 0x81, 0x82, 0x84, 0xA0, 0xA1, 0xA2, 0xFF])
            if let inner = SPNEGOToken.mechanismToken(in: token) {
                found += 1
                // What is found lies inside the token.
                #expect(inner.startIndex >= 0 && inner.endIndex <= token.count)
            }
            _ = NTLMAuthenticateMessage.claim(inNegotiateToken: token)
        }
        #expect(found > 100)
    }
}
