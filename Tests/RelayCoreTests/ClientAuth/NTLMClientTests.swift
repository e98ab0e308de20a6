import Testing
@testable import RelayCore

/// NTLMv2 client messages against MS-NLMP §4.2.4 and the relay's own `NTLMHandshake`.
@Suite struct NTLMClientTests {
    static let credentials = ClientCredentials(user: "Domain\\User", password: "Password")
    static let negotiateHex = "4e544c4d53535000 01000000 078208a0 0000 0000 20000000 0000 0000 20000000"

    static func token(_ value: String?) throws -> [UInt8] {
        let value = try #require(value)
        #expect(value.hasPrefix("NTLM "))
        return try AuthCrypto.base64Decode(value.dropFirst(5), maxDecodedCount: 1 << 16)
    }

    /// A session that has sent its NEGOTIATE.
    static func negotiated(_ credentials: ClientCredentials = credentials) throws -> ClientAuthSession {
        var session = ClientAuthFixtures.session(credentials, peer: .proxy)
        let value = try session.answer(headerValues: ["NTLM", #"Basic realm="r""#], method: "CONNECT", target: "a:443")
        #expect(try token(value) == AuthVectors.bytes(negotiateHex))
        #expect(session.scheme == .ntlm)
        return session
    }

    @Test func computesTheSpecNTLMv2Response() throws {
        let challenge = try NTLMServerChallenge(parsing: AuthNTLMTests.specChallenge)
        #expect(challenge.timestamp == nil)
        #expect(challenge.avPairs.map(\.id) == [2, 1])
        let response = NTLMClientMessages.v2Response(
            ntHash: try #require(NTLMVerifier.ntHash(password: "Password")), user: "User", domain: "Domain",
            challenge: challenge, clientChallenge: AuthNTLMTests.clientChallenge, fileTime: 0)
        #expect(response.ntowfv2 == AuthNTLMTests.ntowfv2)                                          // §4.2.4.1.1
        #expect(response.ntResponse == AuthNTLMTests.ntProofStr + AuthNTLMTests.blob)              // §4.2.4.2.2
        #expect(response.lmResponse == AuthVectors.bytes("86c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa"))  // §4.2.4.2.1
        #expect(response.sessionBaseKey == AuthVectors.bytes("8de40ccadbc14a82f15cb0ad0de95ca3"))  // §4.2.4.1.2
        #expect(!response.carriesMIC)
    }

    @Test func answersTheSpecChallengeWithAnAuthenticateTheVerifierAccepts() throws {
        var session = try Self.negotiated()
        let value = try session.answer(headerValues: ["NTLM " + AuthCrypto.base64Encode(AuthNTLMTests.specChallenge)],
                                       method: "CONNECT", target: "a:443")
        let bytes = try Self.token(value)
        let message = try NTLMAuthenticateMessage(parsing: bytes)
        #expect(message.user == "User" && message.domain == "Domain" && message.workstation == "")
        #expect(message.flags.contains(.unicode))
        #expect(message.ntChallengeResponse == AuthNTLMTests.ntProofStr + AuthNTLMTests.blob)
        #expect(NTLMWire.payloadStart(bytes, descriptors: [12, 20, 28, 36, 44, 52]) == 88)
        let verdict = NTLMVerifier.verify(message, serverChallenge: AuthNTLMTests.serverChallenge) { user, _ in
            user == "User" ? NTLMVerifier.ntHash(password: "Password") : nil
        }
        #expect(verdict == .ok(user: "User", domain: "Domain"))
        // The peer asking again after the AUTHENTICATE refused it.
        #expect(throws: ClientAuthError.loop) {
            try session.answer(headerValues: ["NTLM"], method: "CONNECT", target: "a:443")
        }
    }

    static func relayHandshake(password: String, tamper: (inout [UInt8]) -> Void = { _ in }) throws -> NTLMHandshake.Action {
        var relay = NTLMHandshake(configuration: .init(domain: "Domain", computerName: "Server", allowNTLM2SessionResponse: false))
        let users: (String, String) -> [UInt8]? = { user, _ in user == "User" ? NTLMVerifier.ntHash(password: "Password") : nil }
        var session = ClientAuthSession(credentials: ClientCredentials(user: "User", password: password, domain: "Domain"),
                                        host: "relay", peer: .proxy)
        let first = try #require(try session.answer(headerValues: ["NTLM"], method: "CONNECT", target: "a:443"))
        guard case .sendChallenge(let challenge) = relay.receive(try ProxyAuthorization(parsing: first),
                                                                  unixTime: 1_780_000_000, ntHash: users)
        else {
            Issue.record("the relay sent no challenge")
            return .failed(reason: .badRequest, error: nil)
        }
        let second = try session.answer(headerValues: ["NTLM " + AuthCrypto.base64Encode(challenge)],
                                        method: "CONNECT", target: "a:443")
        var authenticate = try token(second)
        tamper(&authenticate)
        return relay.receive(message: authenticate, unixTime: 1_780_000_000, ntHash: users)
    }

    @Test func theRelayAcceptsTheAnswerToItsTimestampedChallengeWithAMIC() throws {
        #expect(try Self.relayHandshake(password: "Password") == .authenticated(user: "User", domain: "Domain"))
        // The MIC is checked: a changed byte of it fails under the right password.
        let tampered = try Self.relayHandshake(password: "Password") { $0[80] ^= 1 }
        #expect(tampered == .failed(reason: .badRequest, error: nil))
    }

    @Test func theRelayRefusesAWrongPassword() throws {
        #expect(try Self.relayHandshake(password: "Passw0rd") == .failed(reason: .badPassword, error: nil))
    }

    // MARK: Hostile challenges

    static func challenge(_ edit: (inout [UInt8]) -> Void) -> String {
        var bytes = AuthNTLMTests.specChallenge
        edit(&bytes)
        return AuthCrypto.base64Encode(bytes)
    }

    static let hostile: [(String, String)] = [
        ("abc-", "NTLM bad-base64"),
        (String(repeating: "QUFB", count: 2000), "NTLM too-large"),
        (AuthCrypto.base64Encode(Array("NTLMSSQ\0\u{2}\0\0\0".utf8)), "NTLM bad-signature"),
        (AuthCrypto.base64Encode(Array("NTLMSSP".utf8)), "NTLM truncated"),
        (AuthCrypto.base64Encode(AuthVectors.bytes(negotiateHex)), "NTLM message type"),
        (challenge { $0 = Array($0[0..<40]) }, "NTLM truncated"),
        // TargetInfo field claims more bytes than the message holds.
        (challenge { $0[40] = 0xFF; $0[42] = 0xFF }, "TargetInfo"),
        // TargetInfo offset inside the header.
        (challenge { $0[44] = 8 }, "TargetInfo"),
        // The first AV pair's length runs past the end of the list.
        (challenge { $0[68 + 2] = 0xF0 }, "TargetInfo"),
        // No MsvAvEOL: the list stops four bytes short.
        (challenge { $0.removeLast(4); $0[40] -= 4; $0[42] -= 4 }, "TargetInfo"),
        // A repeated AV id.
        (challenge { $0[68 + 16] = 2 }, "TargetInfo"),
        // An empty target info: NTLMv2 has nothing to bind to.
        (challenge { $0[40] = 0; $0[42] = 0 }, "TargetInfo"),
        // A timestamp of the wrong size.
        (challenge { $0[68 + 16] = 7 }, "MsvAvTimestamp"),
    ]

    @Test(arguments: hostile)
    func hostileChallengesAreTypedErrors(token: String, parameter: String) throws {
        var session = try Self.negotiated()
        #expect(throws: ClientAuthError.badChallenge(parameter)) {
            try session.answer(headerValues: ["NTLM " + token], method: "CONNECT", target: "a:443")
        }
    }

    @Test func anOEMOnlyPeerGetsASCIINamesAndRefusesOthers() throws {
        let oemOnly = Self.challenge { $0[20] = ($0[20] & ~1) | 2 }
        var session = try Self.negotiated()
        let message = try NTLMAuthenticateMessage(parsing: try Self.token(
            session.answer(headerValues: ["NTLM " + oemOnly], method: "CONNECT", target: "a:443")))
        #expect(message.flags.contains(.oem) && !message.flags.contains(.unicode))
        #expect(message.user == "User")

        var nonASCII = try Self.negotiated(ClientCredentials(user: "Jäsøn", password: "p", domain: "D"))
        #expect(throws: ClientAuthError.badCredentials("user")) {
            try nonASCII.answer(headerValues: ["NTLM " + oemOnly], method: "CONNECT", target: "a:443")
        }
    }
}
