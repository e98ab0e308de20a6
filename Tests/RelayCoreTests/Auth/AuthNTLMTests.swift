import Testing
@testable import RelayCore

/// MS-NLMP §4.2 vectors, message layout, the handshake state machine and hostile messages.
@Suite struct AuthNTLMTests {
    /// An NTLM AUTHENTICATE message laid out as clients send it: 64-byte header (or 72 with
    /// a zero Version), then domain, user, workstation, LM and NT responses.
    static func authenticateMessage(user: String, domain: String, workstation: String = "COMPUTER",
                                    lm: [UInt8], nt: [UInt8], flags: NTLMNegotiateFlags,
                                    withVersion: Bool = false) -> [UInt8] {
        let unicode = flags.contains(.unicode)
        let encode: (String) -> [UInt8] = { unicode ? AuthVectors.utf16le($0) : Array($0.utf8) }
        let fields = [lm, nt, encode(domain), encode(user), encode(workstation), []]
        let headerLength = withVersion ? 72 : 64
        var message = Array("NTLMSSP".utf8) + [0, 3, 0, 0, 0]
        var payload: [UInt8] = []
        // Payload order differs from descriptor order, as in real clients.
        let order = [2, 3, 4, 0, 1, 5]
        var offsets = [Int](repeating: 0, count: 6)
        for index in order {
            offsets[index] = headerLength + payload.count
            payload += fields[index]
        }
        for index in 0..<6 {
            message += AuthVectors.le16(fields[index].count) + AuthVectors.le16(fields[index].count) + AuthVectors.le32(offsets[index])
        }
        message += AuthVectors.le32(Int(flags.rawValue))
        if withVersion { message += [6, 1, 0xb1, 0x1d, 0, 0, 0, 0x0f] }
        return message + payload
    }


    // MS-NLMP §4.2.1 common values.
    static let serverChallenge = AuthVectors.bytes("0123456789abcdef")
    static let clientChallenge = AuthVectors.bytes("aaaaaaaaaaaaaaaa")
    static let ntHashOfPassword = AuthVectors.bytes("a4f49c406510bdcab6824ee7c30fd852")       // §4.2.2.1.2
    static let ntowfv2 = AuthVectors.bytes("0c868a403bfd7a93a3001ef22ef02e3f")                  // §4.2.4.1.1
    static let ntProofStr = AuthVectors.bytes("68cd0ab851e51c96aabc927bebef6a1c")               // §4.2.4.2.2
    /// §4.2.4.1.3 `temp`: version 1/1, zeros, time 0, client challenge, zeros, the
    /// challenge's AV pairs (MsvAvNbDomainName "Domain", MsvAvNbComputerName "Server",
    /// MsvAvEOL), zeros.
    static let blob = AuthVectors.bytes("""
        0101000000000000 0000000000000000 aaaaaaaaaaaaaaaa 00000000 \
        02000c00 44006f006d00610069006e00 01000c00 530065007200760065007200 00000000 \
        00000000
        """)
    static let essResponse = AuthVectors.bytes("7537f803ae367128ca458204bde7caf81e97ed2683267232") // §4.2.3.2.2
    static let essLMResponse = clientChallenge + [UInt8](repeating: 0, count: 16)                 // §4.2.3.2.1

    static let v2Flags: NTLMNegotiateFlags = [.unicode, .ntlm, .requestTarget, .alwaysSign, .targetInfo]
    static let essFlags: NTLMNegotiateFlags = [.unicode, .ntlm, .requestTarget, .extendedSessionSecurity]

    static func users(_ user: String, _ domain: String) -> [UInt8]? {
        user.uppercased() == "USER" ? ntHashOfPassword : nil
    }

    static func negotiate(_ flags: NTLMNegotiateFlags) -> [UInt8] {
        Array("NTLMSSP".utf8) + [0, 1, 0, 0, 0] + AuthVectors.le32(Int(flags.rawValue)) + [UInt8](repeating: 0, count: 16)
    }

    static func handshake(allowESS: Bool = true) -> NTLMHandshake {
        NTLMHandshake(configuration: .init(domain: "Domain", computerName: "Server", allowNTLM2SessionResponse: allowESS),
                      challengeSource: { AuthNTLMTests.serverChallenge })
    }

    static func v2Authenticate(user: String = "User", domain: String = "Domain", proof: [UInt8] = ntProofStr,
                               flags: NTLMNegotiateFlags = v2Flags, withVersion: Bool = false) -> [UInt8] {
        Self.authenticateMessage(user: user, domain: domain, lm: [UInt8](repeating: 0, count: 24),
                                        nt: proof + blob, flags: flags, withVersion: withVersion)
    }

    // MARK: Vectors

    @Test func computesMSNLMPVectors() {
        #expect(NTLMVerifier.ntHash(password: "Password") == Self.ntHashOfPassword)
        #expect(NTLMVerifier.ntowfv2(ntHash: Self.ntHashOfPassword, user: "User", domain: "Domain") == Self.ntowfv2)
        #expect(NTLMVerifier.ntProofString(ntowfv2: Self.ntowfv2, serverChallenge: Self.serverChallenge, blob: Self.blob)
            == Self.ntProofStr)
        #expect(NTLMVerifier.ntlm2SessionResponse(ntHash: Self.ntHashOfPassword, serverChallenge: Self.serverChallenge,
                                                  clientChallenge: Self.clientChallenge) == Self.essResponse)
        // Session base key of §4.2.4.1.2, as a further check of HMAC-MD5 keyed with NTOWFv2.
        #expect(AuthCrypto.hmacMD5(key: Self.ntowfv2, data: Self.ntProofStr)
            == AuthVectors.bytes("8de40ccadbc14a82f15cb0ad0de95ca3"))
    }

    @Test func uppercasesUserNamesLikeWindows() {
        #expect(NTLMVerifier.windowsUppercased("user") == "USER")
        #expect(NTLMVerifier.windowsUppercased("straße") == "STRAßE")
        #expect(NTLMVerifier.windowsUppercased("jäsøn") == "JÄSØN")
        #expect(NTLMVerifier.ntowfv2(ntHash: Self.ntHashOfPassword, user: "uSeR", domain: "Domain") == Self.ntowfv2)
    }

    @Test func desMatchesNTLMv1Vector() {
        // MS-NLMP §4.2.2.1.2: NTOWFv1("Password"); §4.2.2.2.1: NTLMv1 response =
        // DESL(NTOWFv1, ServerChallenge) — exercises the key expansion and all three blocks.
        let ntHash = NTLMVerifier.ntHash(password: "Password")
        #expect(ntHash == AuthVectors.bytes("a4f49c406510bdcab6824ee7c30fd852"))
        let response = NTLMVerifier.desl(key: ntHash!, data: AuthVectors.bytes("0123456789abcdef"))
        #expect(response == AuthVectors.bytes("67c43011f30298a2ad35ece64f16331c44bdbed927841f94"))
    }

    // MARK: Handshake

    @Test(arguments: [false, true])
    func authenticatesNTLMv2FromTheSpecVectors(withVersion: Bool) throws {
        var handshake = Self.handshake()
        #expect(handshake.phase == .idle)
        guard case .sendChallenge(let challenge) = handshake.receive(message: Self.negotiate(Self.v2Flags), unixTime: 0, ntHash: Self.users) else {
            Issue.record("no challenge")
            return
        }
        #expect(Array(challenge[24..<32]) == Self.serverChallenge)
        #expect(handshake.phase == .challengeSent)
        let result = handshake.receive(message: Self.v2Authenticate(withVersion: withVersion), unixTime: 0, ntHash: Self.users)
        #expect(result == .authenticated(user: "User", domain: "Domain"))
        #expect(handshake.phase == .authenticated(user: "User", domain: "Domain"))
    }

    @Test func authenticatesTheNTLM2SessionResponseVector() {
        var handshake = Self.handshake()
        _ = handshake.receive(message: Self.negotiate(Self.essFlags), unixTime: 0, ntHash: Self.users)
        let message = Self.authenticateMessage(user: "User", domain: "Domain", lm: Self.essLMResponse,
                                                      nt: Self.essResponse, flags: Self.essFlags)
        #expect(handshake.receive(message: message, unixTime: 0, ntHash: Self.users) == .authenticated(user: "User", domain: "Domain"))

        var strict = Self.handshake(allowESS: false)
        _ = strict.receive(message: Self.negotiate(Self.essFlags), unixTime: 0, ntHash: Self.users)
        #expect(strict.receive(message: message, unixTime: 0, ntHash: Self.users) == .failed(reason: .unsupported, error: nil))
    }

    @Test func refusesPlainNTLMv1AndLMOnly() {
        // §4.2.2.2: the plain NTLMv1 response to the same challenge; right, but refused.
        let v1 = AuthVectors.bytes("67c43011f30298a2ad35ece64f16331c44bdbed927841f94")
        let flags: NTLMNegotiateFlags = [.unicode, .ntlm]
        var handshake = Self.handshake()
        _ = handshake.receive(message: Self.negotiate(flags), unixTime: 0, ntHash: Self.users)
        let message = Self.authenticateMessage(user: "User", domain: "Domain", lm: v1, nt: v1, flags: flags)
        #expect(handshake.receive(message: message, unixTime: 0, ntHash: Self.users) == .failed(reason: .unsupported, error: nil))

        var lmOnly = Self.handshake()
        _ = lmOnly.receive(message: Self.negotiate(flags), unixTime: 0, ntHash: Self.users)
        let lm = Self.authenticateMessage(user: "User", domain: "Domain", lm: v1, nt: [], flags: flags)
        #expect(lmOnly.receive(message: lm, unixTime: 0, ntHash: Self.users) == .failed(reason: .unsupported, error: nil))
    }

    @Test func refusesWrongPasswordsUnknownUsersAndAnonymous() {
        func attempt(_ message: [UInt8]) -> NTLMHandshake.Action {
            var handshake = Self.handshake()
            _ = handshake.receive(message: Self.negotiate(Self.v2Flags), unixTime: 0, ntHash: Self.users)
            return handshake.receive(message: message, unixTime: 0, ntHash: Self.users)
        }
        var wrongProof = Self.ntProofStr
        wrongProof[15] ^= 0x80
        #expect(attempt(Self.v2Authenticate(proof: wrongProof)) == .failed(reason: .badPassword, error: nil))
        #expect(attempt(Self.v2Authenticate(domain: "Other")) == .failed(reason: .badPassword, error: nil))
        #expect(attempt(Self.v2Authenticate(user: "Mallory")) == .failed(reason: .unknownUser, error: nil))
        #expect(attempt(Self.authenticateMessage(user: "", domain: "", lm: [0], nt: [], flags: Self.v2Flags))
            == .failed(reason: .unknownUser, error: nil))
        // A case-insensitive user match is Windows behaviour, and the NTOWFv2 agrees.
        #expect(attempt(Self.v2Authenticate(user: "user")) == .authenticated(user: "user", domain: "Domain"))
        // Blob with the wrong response version, and a response too short for NTLMv2.
        var badBlob = Self.v2Authenticate()
        badBlob[badBlob.count - Self.blob.count] = 2
        #expect(attempt(badBlob) == .failed(reason: .badRequest, error: nil))
        let short = Self.authenticateMessage(user: "User", domain: "Domain", lm: [], nt: Array(repeating: 1, count: 30), flags: Self.v2Flags)
        #expect(attempt(short) == .failed(reason: .badRequest, error: nil))
    }

    @Test func storeReturningAWrongLengthHashIsAnInternalError() {
        var handshake = Self.handshake()
        _ = handshake.receive(message: Self.negotiate(Self.v2Flags), unixTime: 0, ntHash: Self.users)
        #expect(handshake.receive(message: Self.v2Authenticate(), unixTime: 0, ntHash: { _, _ in [1] })
            == .failed(reason: .internalError, error: nil))
    }

    @Test func authenticateWithoutChallengeFailsForGood() {
        var handshake = Self.handshake()
        #expect(handshake.receive(message: Self.v2Authenticate(), unixTime: 0, ntHash: Self.users)
            == .failed(reason: .badRequest, error: .badMessageType))
        #expect(handshake.phase == .failed(reason: .badRequest))
        // Failed is final: even a fresh NEGOTIATE is refused on this connection.
        #expect(handshake.receive(message: Self.negotiate(Self.v2Flags), unixTime: 0, ntHash: Self.users)
            == .failed(reason: .badRequest, error: nil))
    }

    @Test func aSecondAuthenticateNeedsANewChallenge() {
        var handshake = Self.handshake()
        _ = handshake.receive(message: Self.negotiate(Self.v2Flags), unixTime: 0, ntHash: Self.users)
        #expect(handshake.receive(message: Self.v2Authenticate(), unixTime: 0, ntHash: Self.users)
            == .authenticated(user: "User", domain: "Domain"))
        #expect(handshake.receive(message: Self.v2Authenticate(), unixTime: 0, ntHash: Self.users)
            == .failed(reason: .badRequest, error: .badMessageType))
    }

    @Test func negotiateRestartsAfterLoginWithAFreshChallenge() {
        var handshake = Self.handshake()
        _ = handshake.receive(message: Self.negotiate(Self.v2Flags), unixTime: 0, ntHash: Self.users)
        _ = handshake.receive(message: Self.v2Authenticate(), unixTime: 0, ntHash: Self.users)
        guard case .sendChallenge = handshake.receive(message: Self.negotiate(Self.v2Flags), unixTime: 0, ntHash: Self.users) else {
            Issue.record("no new challenge")
            return
        }
        #expect(handshake.phase == .challengeSent)
    }

    @Test func challengeTypeFromTheClientIsRefused() {
        var handshake = Self.handshake()
        let challenge = NTLMChallengeMessage(answering: Self.v2Flags, serverChallenge: Self.serverChallenge,
                                             domain: "D", computerName: "C", unixTime: 0)
        #expect(handshake.receive(message: challenge.bytes, unixTime: 0, ntHash: Self.users)
            == .failed(reason: .badRequest, error: .badMessageType))
    }

    @Test func acceptsBase64TokensFromTheHeader() throws {
        var handshake = Self.handshake()
        let type1 = try ProxyAuthorization(parsing: "NTLM " + AuthCrypto.base64Encode(Self.negotiate(Self.v2Flags)))
        guard case .sendChallenge = handshake.receive(type1, unixTime: 0, ntHash: Self.users) else {
            Issue.record("no challenge")
            return
        }
        let type3 = try ProxyAuthorization(parsing: "ntlm " + AuthCrypto.base64Encode(Self.v2Authenticate()))
        #expect(handshake.receive(type3, unixTime: 0, ntHash: Self.users) == .authenticated(user: "User", domain: "Domain"))

        var garbage = Self.handshake()
        #expect(garbage.receive(try ProxyAuthorization(parsing: "NTLM a=b"), unixTime: 0, ntHash: Self.users)
            == .failed(reason: .badRequest, error: .malformedHeader))
        var badBase64 = Self.handshake()
        #expect(badBase64.receive(try ProxyAuthorization(parsing: "NTLM TlRMTVNTUA="), unixTime: 0, ntHash: Self.users)
            == .failed(reason: .badRequest, error: .badBase64))
        var wrongScheme = Self.handshake()
        #expect(wrongScheme.receive(try ProxyAuthorization(parsing: "Negotiate TlRMTVNTUAA="), unixTime: 0, ntHash: Self.users)
            == .failed(reason: .badRequest, error: .malformedHeader))
    }

    // MARK: A third-party client's messages, with MIC

    /// Chromium's NTLM test data (net/ntlm/ntlm_test_data.h), built from the MS-NLMP §4.2
    /// inputs: its NEGOTIATE, the CHALLENGE of MS-NLMP §4.2.4.3, and Chromium's
    /// AUTHENTICATE answer with Version, MIC (MsvAvFlags = 2), channel bindings and SPN AV
    /// pairs and a client timestamp. MIC and session base key re-checked with Python's hmac.
    static let chromiumNegotiate = AuthVectors.bytes("4e544c4d53535000010000000782080000000000200000000000000020000000")
    static let specChallenge = AuthVectors.bytes("""
        4e544c4d53535000020000000c000c003800000033828ae20123456789abcdef0000000000000000240024004400\
        0000060070170000000f53006500720076006500720002000c0044006f006d00610069006e0001000c00530065\
        00720076006500720000000000
        """)
    static let chromiumAuthenticate = AuthVectors.bytes("""
        4e544c4d535350000300000018001800580000008a008a00700000000c000c00fa000000080008000601000010\
        0010000e0100000000000058000000038208000000000000000000f7361633f0ad9bdf4a7c421bc6b824a30000\
        000000000000000000000000000000000000000000008c0260dbef690662af9c42d50782d2ed01010000000000\
        00800bc8fd00d4d201aaaaaaaaaaaaaaaa0000000002000c0044006f006d00610069006e0001000c0053006500\
        720076006500720006000400020000000a0010006586e99d81c2fc984e47172fd4dd0310090016004800540054\
        0050002f00530065007200760065007200000000000000000044006f006d00610069006e005500730065007200\
        43004f004d0050005500540045005200
        """)

    /// What a helper-fronting caller learns from a token: the AUTHENTICATE's user, nothing
    /// from a NEGOTIATE or a fragment, and `malformed` for an AUTHENTICATE the parser refuses
    /// (here one padded past the NT response bound): that one must not reach a helper.
    @Test func aTokensClaimNamesTheUserOrRefusesAMalformedAuthenticate() {
        #expect(NTLMAuthenticateMessage.claim(in: Self.chromiumAuthenticate) == .user("User"))
        #expect(NTLMAuthenticateMessage.claim(in: Self.chromiumNegotiate) == .notAuthenticate)
        #expect(NTLMAuthenticateMessage.claim(in: Array("not ntlm at all".utf8)) == .notAuthenticate)
        #expect(NTLMAuthenticateMessage.claim(in: Array(Self.chromiumAuthenticate.prefix(40))) == .notAuthenticate)
        var padded = Self.chromiumAuthenticate
        let extra = NTLMAuthenticateMessage.maxResponseLength
        padded += [UInt8](repeating: 0, count: extra)
        // NtChallengeResponse (descriptor at 20): claim the padding as part of the response.
        let length = UInt16(138 + extra)
        padded[20] = UInt8(truncatingIfNeeded: length); padded[21] = UInt8(truncatingIfNeeded: length >> 8)
        padded[22] = padded[20]; padded[23] = padded[21]
        #expect(NTLMAuthenticateMessage.claim(in: padded) == .malformed)
    }

    @Test func verifiesAThirdPartyAuthenticateWithItsMIC() throws {
        let message = try NTLMAuthenticateMessage(parsing: Self.chromiumAuthenticate)
        #expect(message.user == "User" && message.domain == "Domain" && message.workstation == "COMPUTER")
        #expect(message.ntChallengeResponse.count == 138 && message.lmChallengeResponse == [UInt8](repeating: 0, count: 24))
        #expect(NTLMVerifier.verify(message, serverChallenge: Self.serverChallenge, ntHash: Self.users)
            == .ok(user: "User", domain: "Domain"))

        let transcript = NTLMVerifier.Transcript(negotiate: Self.chromiumNegotiate, challenge: Self.specChallenge,
                                                 authenticate: Self.chromiumAuthenticate)
        #expect(NTLMVerifier.verify(message, serverChallenge: Self.serverChallenge, transcript: transcript, ntHash: Self.users)
            == .ok(user: "User", domain: "Domain"))

        var zeroed = Self.chromiumAuthenticate
        zeroed.replaceSubrange(72..<88, with: [UInt8](repeating: 0, count: 16))
        #expect(NTLMVerifier.mic(exportedSessionKey: AuthVectors.bytes("623dbd071be7a530b6a95c2eb4982470"),
                                 negotiate: Self.chromiumNegotiate, challenge: Self.specChallenge,
                                 authenticateWithZeroMIC: zeroed)
            == AuthVectors.bytes("f7361633f0ad9bdf4a7c421bc6b824a3"))

        // Any altered message breaks the MIC, though the password proof still holds.
        var badMIC = transcript
        badMIC.authenticate[80] ^= 1
        var badChallenge = transcript
        badChallenge.challenge[22] ^= 1
        var badNegotiate = transcript
        badNegotiate.negotiate[12] ^= 4
        for altered in [badMIC, badChallenge, badNegotiate] {
            #expect(NTLMVerifier.verify(message, serverChallenge: Self.serverChallenge, transcript: altered, ntHash: Self.users)
                == .failed(reason: .badRequest))
        }
        // A wrong password is still reported as such, MIC or not.
        #expect(NTLMVerifier.verify(message, serverChallenge: Self.serverChallenge, transcript: transcript,
                                    ntHash: { _, _ in NTLMVerifier.ntHash(password: "password") })
            == .failed(reason: .badPassword))
    }

    @Test func handshakeChecksTheMICOverItsOwnMessages() throws {
        var handshake = Self.handshake()
        guard case .sendChallenge(let challenge) = handshake.receive(message: Self.chromiumNegotiate, unixTime: 0, ntHash: Self.users) else {
            Issue.record("no challenge")
            return
        }
        // Answer as a MIC-sending client would: the spec blob plus MsvAvFlags = 2.
        let blob = Array(Self.blob[0..<28]) + AuthVectors.bytes("0600 0400 02000000") + Array(Self.blob[28...])
        let proof = NTLMVerifier.ntProofString(ntowfv2: Self.ntowfv2, serverChallenge: Self.serverChallenge, blob: blob)
        var message = Self.authenticateMessage(user: "User", domain: "Domain", lm: [UInt8](repeating: 0, count: 24),
                                               nt: proof + blob, flags: Self.v2Flags, withVersion: true)
        // Make room for the MIC: shift every payload offset by 16 and insert zeros at 72.
        for descriptor in [12, 20, 28, 36, 44, 52] {
            let offset = Int(NTLMWire.uint32(message, at: descriptor + 4)) + 16
            message.replaceSubrange((descriptor + 4)..<(descriptor + 8), with: AuthVectors.le32(offset))
        }
        message.insert(contentsOf: [UInt8](repeating: 0, count: 16), at: 72)
        let sessionBaseKey = AuthCrypto.hmacMD5(key: Self.ntowfv2, data: proof)
        let mic = NTLMVerifier.mic(exportedSessionKey: sessionBaseKey, negotiate: Self.chromiumNegotiate,
                                   challenge: challenge, authenticateWithZeroMIC: message)

        var withoutMIC = handshake
        #expect(withoutMIC.receive(message: message, unixTime: 0, ntHash: Self.users) == .failed(reason: .badRequest, error: nil))
        message.replaceSubrange(72..<88, with: mic)
        #expect(handshake.receive(message: message, unixTime: 0, ntHash: Self.users) == .authenticated(user: "User", domain: "Domain"))
    }

    // MARK: CHALLENGE layout

    @Test func buildsTheChallengeLayout() {
        let challenge = NTLMChallengeMessage(answering: Self.essFlags, serverChallenge: Self.serverChallenge,
                                             domain: "Domain", computerName: "Server", unixTime: 0)
        let bytes = challenge.bytes
        #expect(Array(bytes[0..<12]) == Array("NTLMSSP".utf8) + [0, 2, 0, 0, 0])
        // TargetName: 12 bytes of UTF-16LE "Domain" at offset 56.
        #expect(Array(bytes[12..<20]) == [12, 0, 12, 0, 56, 0, 0, 0])
        #expect(Array(bytes[56..<68]) == AuthVectors.utf16le("Domain"))
        let flags = NTLMNegotiateFlags(rawValue: NTLMWire.uint32(bytes, at: 20))
        #expect(flags == [.unicode, .ntlm, .requestTarget, .targetTypeDomain, .targetInfo, .extendedSessionSecurity])
        #expect(Array(bytes[24..<32]) == Self.serverChallenge)
        #expect(Array(bytes[32..<40]) == [UInt8](repeating: 0, count: 8))
        // TargetInfo: the AV pairs right after the target name; FILETIME(Unix 0) = 116444736000000000.
        let expectedInfo = AuthVectors.bytes("""
            02000c00 44006f006d00610069006e00 01000c00 530065007200760065007200 \
            07000800 00803ed5deb19d01 00000000
            """)
        #expect(challenge.targetInfo == expectedInfo)
        #expect(Array(bytes[40..<48]) == AuthVectors.le16(expectedInfo.count) + AuthVectors.le16(expectedInfo.count) + AuthVectors.le32(68))
        #expect(Array(bytes[68...]) == expectedInfo)
        #expect(bytes.count == 68 + expectedInfo.count)
    }

    @Test func answersOEMOnlyClientsInOEM() throws {
        let challenge = NTLMChallengeMessage(answering: [.oem, .ntlm], serverChallenge: Self.serverChallenge,
                                             domain: "Domain", computerName: "Server", unixTime: 0)
        #expect(challenge.flags.contains(.oem) && !challenge.flags.contains(.unicode))
        #expect(!challenge.flags.contains(.extendedSessionSecurity))
        #expect(Array(challenge.bytes[56..<62]) == Array("Domain".utf8))

        let flags: NTLMNegotiateFlags = [.oem, .ntlm, .requestTarget]
        let oem = Self.authenticateMessage(user: "User", domain: "Domain", lm: [], nt: Self.ntProofStr + Self.blob, flags: flags)
        let parsed = try? NTLMAuthenticateMessage(parsing: oem)
        #expect(parsed?.user == "User" && parsed?.domain == "Domain" && parsed?.workstation == "COMPUTER")
        let latin = Self.authenticateMessage(user: "Usér", domain: "Domain", lm: [], nt: [], flags: flags)
        #expect(throws: AuthError.badField("UserName")) { try NTLMAuthenticateMessage(parsing: latin) }
    }

    // MARK: Hostile messages

    /// Rewrites the (Len, MaxLen, Offset) descriptor at `descriptor`.
    static func withField(_ message: [UInt8], at descriptor: Int, length: Int, offset: Int) -> [UInt8] {
        var copy = message
        copy.replaceSubrange(descriptor..<(descriptor + 8),
                             with: AuthVectors.le16(length) + AuthVectors.le16(length) + AuthVectors.le32(offset))
        return copy
    }

    static let type3Fields = [(12, "LmChallengeResponse"), (20, "NtChallengeResponse"), (28, "DomainName"),
                              (36, "UserName"), (44, "Workstation"), (52, "EncryptedRandomSessionKey")]

    @Test func refusesAuthenticateFieldsOutsideTheMessage() {
        let good = Self.v2Authenticate()
        #expect(throws: Never.self) { try NTLMAuthenticateMessage(parsing: good) }
        for (descriptor, name) in Self.type3Fields {
            let cases = [
                (4, good.count - 3),          // runs past the end by one
                (4, good.count),              // starts at the end
                (1, 0xFFFF_FFFF),             // offset 2^32-1
                (0xFFFF, 64),                 // length 2^16-1
                (0xFFFF, 0xFFFF_FFFF),        // both at their maximum
                (4, 8),                       // inside the header
                (4, 63),                      // straddles the header end
            ]
            for (length, offset) in cases {
                #expect(throws: AuthError.badField(name)) {
                    try NTLMAuthenticateMessage(parsing: Self.withField(good, at: descriptor, length: length, offset: offset))
                }
            }
            // An empty field's offset is never looked at.
            let empty = Self.withField(good, at: descriptor, length: 0, offset: 0xFFFF_FFFF)
            #expect((try? NTLMAuthenticateMessage(parsing: empty)) != nil)
        }
    }

    @Test func refusesTruncatedWrongSignatureWrongTypeAndOversize() {
        let good = Self.v2Authenticate()
        for length in 0..<64 {
            #expect(throws: AuthError.self) { try NTLMAuthenticateMessage(parsing: Array(good.prefix(length))) }
        }
        #expect(throws: AuthError.truncated) { try NTLMAuthenticateMessage(parsing: Array(good.prefix(11))) }
        #expect(throws: AuthError.truncated) { try NTLMAuthenticateMessage(parsing: Array(good.prefix(63))) }
        // Cut inside the payload: the NT response (last) now runs past the end.
        #expect(throws: AuthError.badField("NtChallengeResponse")) { try NTLMAuthenticateMessage(parsing: Array(good.dropLast())) }
        var signature = good
        signature[6] = UInt8(ascii: "Q")
        #expect(throws: AuthError.badSignature) { try NTLMAuthenticateMessage(parsing: signature) }
        for type in [0, 1, 2, 4, 0x0300_0000] {
            var wrong = good
            wrong.replaceSubrange(8..<12, with: AuthVectors.le32(type))
            #expect(throws: AuthError.badMessageType) { try NTLMAuthenticateMessage(parsing: wrong) }
        }
        #expect(throws: AuthError.tooLarge) {
            try NTLMAuthenticateMessage(parsing: good + [UInt8](repeating: 0, count: NTLMAuthenticateMessage.maxLength))
        }
    }

    @Test func refusesBadUTF16Names() {
        let good = Self.v2Authenticate()
        // UserName is 8 bytes of "User"; make it 7 (odd).
        let userOffset = Int(NTLMWire.uint32(good, at: 40))
        #expect(throws: AuthError.badField("UserName")) {
            try NTLMAuthenticateMessage(parsing: Self.withField(good, at: 36, length: 7, offset: userOffset))
        }
        var surrogate = good
        surrogate.replaceSubrange(userOffset..<(userOffset + 2), with: [0x00, 0xD8])   // lone high surrogate
        #expect(throws: AuthError.badUTF8) { try NTLMAuthenticateMessage(parsing: surrogate) }
        var nul = good
        nul.replaceSubrange(userOffset..<(userOffset + 2), with: [0x00, 0x00])
        #expect(throws: AuthError.controlCharacter) { try NTLMAuthenticateMessage(parsing: nul) }
    }

    @Test func checksNegotiateMessages() throws {
        #expect(try NTLMNegotiateMessage(parsing: Self.negotiate(Self.v2Flags)).flags == Self.v2Flags)
        // The 16-byte form of old clients, and one with Version.
        let short = Array(Self.negotiate(Self.v2Flags).prefix(16))
        #expect(try NTLMNegotiateMessage(parsing: short).flags == Self.v2Flags)
        let withVersion = Self.negotiate(Self.v2Flags.union(.version)) + [6, 1, 0xb1, 0x1d, 0, 0, 0, 0x0f]
        #expect(try NTLMNegotiateMessage(parsing: withVersion).flags.contains(.version))
        // Domain and workstation present and in range.
        var named = Self.negotiate(Self.v2Flags)
        named.replaceSubrange(16..<24, with: AuthVectors.le16(3) + AuthVectors.le16(3) + AuthVectors.le32(32))
        named += Array("DOM".utf8)
        #expect(throws: Never.self) { try NTLMNegotiateMessage(parsing: named) }

        for length in [0, 7, 11, 15] {
            #expect(throws: AuthError.truncated) { try NTLMNegotiateMessage(parsing: Array(Self.negotiate(Self.v2Flags).prefix(length))) }
        }
        for length in 17..<32 {
            #expect(throws: AuthError.truncated) { try NTLMNegotiateMessage(parsing: Array(Self.negotiate(Self.v2Flags).prefix(length))) }
        }
        var badSignature = Self.negotiate(Self.v2Flags)
        badSignature[7] = 1
        #expect(throws: AuthError.badSignature) { try NTLMNegotiateMessage(parsing: badSignature) }
        var wrongType = Self.negotiate(Self.v2Flags)
        wrongType[8] = 3
        #expect(throws: AuthError.badMessageType) { try NTLMNegotiateMessage(parsing: wrongType) }
        for (length, offset) in [(3, 30), (3, 0xFFFF_FFFF), (0xFFFF, 32), (4, 32)] {
            var bad = named
            bad.replaceSubrange(16..<24, with: AuthVectors.le16(length) + AuthVectors.le16(length) + AuthVectors.le32(offset))
            #expect(throws: AuthError.badField("DomainName")) { try NTLMNegotiateMessage(parsing: bad) }
        }
        #expect(throws: AuthError.tooLarge) { try NTLMNegotiateMessage(parsing: named + [UInt8](repeating: 0, count: 1024)) }
    }
}
