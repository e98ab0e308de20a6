/// Verifies NTLM challenge responses from the stored NT hash (MS-NLMP §3.3).
///
/// Accepted: NTLMv2 (§3.3.2) and, when allowed, the NTLM2 session response (NTLMv1 with
/// extended session security, §3.3.1). Refused as `unsupported-auth`: plain NTLMv1 and
/// LM-only responses, which fall to offline cracking of captured traffic. Every
/// comparison is constant-time; MD4, MD5, HMAC-MD5 and DES are OpenSSL's.
public enum NTLMVerifier {
    /// The NT hash a user store keeps (encrypted: it is password-equivalent):
    /// `MD4(UTF16LE(password))`. Nil when OpenSSL's legacy provider is unavailable.
    public static func ntHash(password: String) -> [UInt8]? {
        AuthCrypto.md4(NTLMWire.encodeUTF16LE(password))
    }

    /// The three messages of one handshake, exactly as sent and received, over which an
    /// NTLMv2 client computes its MIC (MS-NLMP §3.1.5.1.2).
    public struct Transcript: Sendable {
        /// The NEGOTIATE as received.
        public var negotiate: [UInt8]
        /// The CHALLENGE as sent.
        public var challenge: [UInt8]
        /// The AUTHENTICATE as received.
        public var authenticate: [UInt8]

        /// The three messages.
        public init(negotiate: [UInt8], challenge: [UInt8], authenticate: [UInt8]) {
            self.negotiate = negotiate
            self.challenge = challenge
            self.authenticate = authenticate
        }
    }

    /// Verifies `message`, the answer to `serverChallenge`. `ntHash` returns the stored NT
    /// hash for the user and domain the message names, or nil for an unknown user.
    ///
    /// With a `transcript`, an NTLMv2 response whose (proof-protected) AV pairs announce a
    /// MIC must carry the right one, so no message of the handshake can have been altered;
    /// a wrong MIC under a right password fails as `bad-request`.
    public static func verify(_ message: NTLMAuthenticateMessage,
                              serverChallenge: [UInt8],
                              allowNTLM2SessionResponse: Bool = true,
                              transcript: Transcript? = nil,
                              ntHash: (_ user: String, _ domain: String) -> [UInt8]?) -> NTLMVerification {
        precondition(serverChallenge.count == 8)
        let response = message.ntChallengeResponse
        if response.isEmpty {
            // Empty user and responses: anonymous; a user with only an LM response: LM.
            return .failed(reason: message.user.isEmpty ? .unknownUser : .unsupported)
        }
        guard !message.user.isEmpty else { return .failed(reason: .unknownUser) }

        let stored = ntHash(message.user, message.domain)
        if let stored, stored.count != 16 { return .failed(reason: .internalError) }
        // Unknown users cost the same work as known ones.
        let key = stored ?? [UInt8](repeating: 0, count: 16)

        let matches: Bool
        switch response.count {
        case 24:
            guard allowNTLM2SessionResponse, message.flags.contains(.extendedSessionSecurity),
                  message.lmChallengeResponse.count == 24,
                  message.lmChallengeResponse[8...].allSatisfy({ $0 == 0 })
            else { return .failed(reason: .unsupported) }
            let clientChallenge = Array(message.lmChallengeResponse[0..<8])
            guard let expected = ntlm2SessionResponse(ntHash: key, serverChallenge: serverChallenge,
                                                      clientChallenge: clientChallenge)
            else { return .failed(reason: .internalError) }
            matches = AuthCrypto.constantTimeEquals(expected, response)
        case 48...:
            let blob = Array(response[16...])
            // NTLMv2_CLIENT_CHALLENGE: RespType and HiRespType are both 1.
            guard blob[0] == 1, blob[1] == 1 else { return .failed(reason: .badRequest) }
            let v2Key = ntowfv2(ntHash: key, user: message.user, domain: message.domain)
            let proof = ntProofString(ntowfv2: v2Key, serverChallenge: serverChallenge, blob: blob)
            matches = AuthCrypto.constantTimeEquals(proof, Array(response[0..<16]))
            if matches, stored != nil, let transcript {
                // Only now is the blob known to be the client's own, unaltered.
                guard let avPairs = parseAVPairs(blob[28...]) else { return .failed(reason: .badRequest) }
                if let avFlags = avPairs[6], avFlags.count == 4, avFlags[0] & 0x02 != 0 {
                    let sessionBaseKey = AuthCrypto.hmacMD5(key: v2Key, data: proof)
                    guard !message.flags.contains(.keyExchange),
                          micMatches(transcript, exportedSessionKey: sessionBaseKey)
                    else { return .failed(reason: .badRequest) }
                }
            }
        default:
            return .failed(reason: .badRequest)
        }
        guard stored != nil else { return .failed(reason: .unknownUser) }
        return matches ? .ok(user: message.user, domain: message.domain) : .failed(reason: .badPassword)
    }

    /// MIC = HMAC_MD5(ExportedSessionKey, NEGOTIATE ‖ CHALLENGE ‖ AUTHENTICATE with the MIC
    /// zeroed). Without key exchange (never offered here) the exported session key is the
    /// session base key, HMAC_MD5(NTOWFv2, NTProofStr). The MIC sits at bytes 72..<88,
    /// after the Version field, so every payload must start at or after byte 88.
    static func micMatches(_ transcript: Transcript, exportedSessionKey: [UInt8]) -> Bool {
        let authenticate = transcript.authenticate
        guard authenticate.count >= 88,
              NTLMWire.payloadStart(authenticate, descriptors: [12, 20, 28, 36, 44, 52]) >= 88
        else { return false }
        var zeroed = authenticate
        zeroed.replaceSubrange(72..<88, with: [UInt8](repeating: 0, count: 16))
        let expected = mic(exportedSessionKey: exportedSessionKey, negotiate: transcript.negotiate,
                           challenge: transcript.challenge, authenticateWithZeroMIC: zeroed)
        return AuthCrypto.constantTimeEquals(expected, Array(authenticate[72..<88]))
    }

    static func mic(exportedSessionKey: [UInt8], negotiate: [UInt8], challenge: [UInt8],
                    authenticateWithZeroMIC: [UInt8]) -> [UInt8] {
        AuthCrypto.hmacMD5(key: exportedSessionKey, data: negotiate + challenge + authenticateWithZeroMIC)
    }

    /// The AV pairs of an NTLMv2 client blob by AvId, up to MsvAvEOL; nil when a pair runs
    /// past the end, an id repeats, or there is no EOL.
    static func parseAVPairs(_ bytes: ArraySlice<UInt8>) -> [UInt16: [UInt8]]? {
        var pairs: [UInt16: [UInt8]] = [:]
        var index = bytes.startIndex
        while bytes.endIndex - index >= 4 {
            let id = UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8
            let length = Int(UInt16(bytes[index + 2]) | UInt16(bytes[index + 3]) << 8)
            index += 4
            if id == 0 { return pairs }
            guard length <= bytes.endIndex - index, pairs[id] == nil else { return nil }
            pairs[id] = Array(bytes[index..<(index + length)])
            index += length
        }
        return nil
    }

    /// NTOWFv2 = HMAC_MD5(NT hash, UTF16LE(UPPER(user) + domain)) (MS-NLMP §3.3.2).
    static func ntowfv2(ntHash: [UInt8], user: String, domain: String) -> [UInt8] {
        AuthCrypto.hmacMD5(key: ntHash, data: NTLMWire.encodeUTF16LE(windowsUppercased(user) + domain))
    }

    /// NTProofStr = HMAC_MD5(NTOWFv2, ServerChallenge ‖ blob).
    static func ntProofString(ntowfv2: [UInt8], serverChallenge: [UInt8], blob: [UInt8]) -> [UInt8] {
        AuthCrypto.hmacMD5(key: ntowfv2, data: serverChallenge + blob)
    }

    /// NTLMv1 with extended session security (MS-NLMP §3.3.1):
    /// DESL(NT hash, MD5(ServerChallenge ‖ ClientChallenge)[0..<8]).
    static func ntlm2SessionResponse(ntHash: [UInt8], serverChallenge: [UInt8], clientChallenge: [UInt8]) -> [UInt8]? {
        desl(key: ntHash, data: Array(AuthCrypto.md5(serverChallenge + clientChallenge).prefix(8)))
    }

    /// DESL (MS-NLMP §6): three DES encryptions of `data` under the 16-byte key split into
    /// 7-byte parts, the last padded with zeros.
    static func desl(key: [UInt8], data: [UInt8]) -> [UInt8]? {
        precondition(key.count == 16 && data.count == 8)
        let padded = key + [UInt8](repeating: 0, count: 5)
        var out: [UInt8] = []
        for part in 0..<3 {
            guard let block = AuthCrypto.desEncryptBlock(key56: padded[(7 * part)..<(7 * part + 7)], block: data) else {
                return nil
            }
            out += block
        }
        return out
    }

    /// Windows uppercases user names one UTF-16 unit at a time (RtlUpcaseUnicodeString),
    /// never changing the length: use each scalar's uppercase mapping only when it is a
    /// single scalar (so `ß` stays `ß`, as on Windows, instead of becoming `SS`).
    static func windowsUppercased(_ text: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let mapped = scalar.properties.uppercaseMapping.unicodeScalars
            if mapped.count == 1, let single = mapped.first {
                result.append(single)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }
}
