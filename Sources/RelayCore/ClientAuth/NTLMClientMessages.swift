/// The NTLM messages a client sends (MS-NLMP §3.1.5): the NEGOTIATE that opens the
/// handshake and the AUTHENTICATE answering the server's CHALLENGE with an NTLMv2 response.
///
/// Only NTLMv2 is ever computed: NTLMv1 and LM responses fall to offline cracking of
/// captured traffic. No session security is negotiated (HTTP authentication needs none),
/// so no key exchange happens and the exported session key is the session base key.
enum NTLMClientMessages {
    /// What the NEGOTIATE asks for.
    static let negotiateFlags: NTLMNegotiateFlags = [
        .unicode, .oem, .requestTarget, .ntlm, .alwaysSign, .extendedSessionSecurity, .bits128, .bits56,
    ]

    /// Version field sent in the AUTHENTICATE: Windows 10.0, NTLMSSP revision 15. Peers
    /// only log it; its presence puts the MIC at the offset they read it from.
    private static let version: [UInt8] = [10, 0, 0, 0, 0, 0, 0, 15]

    /// The 32-byte NEGOTIATE, with empty domain and workstation fields.
    static func negotiate() -> [UInt8] {
        var message = NTLMWire.signature
        NTLMWire.appendUInt32(NTLMWire.MessageType.negotiate.rawValue, to: &message)
        NTLMWire.appendUInt32(negotiateFlags.rawValue, to: &message)
        for _ in 0..<2 {
            NTLMWire.appendUInt16(0, to: &message)
            NTLMWire.appendUInt16(0, to: &message)
            NTLMWire.appendUInt32(32, to: &message)
        }
        return message
    }

    /// The NTLMv2 parts of an answer, separate so the spec's vectors can check them.
    struct V2Response: Equatable {
        let ntowfv2: [UInt8]
        /// NTProofStr ‖ blob.
        let ntResponse: [UInt8]
        /// LMv2, or 24 zero bytes when the server sent a timestamp (MS-NLMP §3.1.5.1.2).
        let lmResponse: [UInt8]
        let sessionBaseKey: [UInt8]
        /// True when the blob announces a MIC (MsvAvFlags bit 0x2).
        let carriesMIC: Bool
    }

    /// NTOWFv2, the blob (version, time, client challenge, the server's AV pairs with
    /// MsvAvFlags added when a MIC will be sent, MsvAvEOL) and the responses over it.
    /// `fileTime` is used only when the server sent no MsvAvTimestamp.
    static func v2Response(ntHash: [UInt8], user: String, domain: String, challenge: NTLMServerChallenge,
                           clientChallenge: [UInt8], fileTime: UInt64) -> V2Response {
        precondition(clientChallenge.count == 8)
        let ntowfv2 = NTLMVerifier.ntowfv2(ntHash: ntHash, user: user, domain: domain)
        let carriesMIC = challenge.timestamp != nil

        var blob: [UInt8] = [1, 1, 0, 0, 0, 0, 0, 0]
        NTLMWire.appendUInt64(challenge.timestamp ?? fileTime, to: &blob)
        blob += clientChallenge
        blob += [0, 0, 0, 0]
        var flagsSeen = false
        for pair in challenge.avPairs {
            var value = pair.value
            if pair.id == 6, carriesMIC, value.count == 4 {
                value[0] |= 0x02
                flagsSeen = true
            }
            appendAVPair(pair.id, value, to: &blob)
        }
        if carriesMIC, !flagsSeen { appendAVPair(6, [2, 0, 0, 0], to: &blob) }
        appendAVPair(0, [], to: &blob)
        blob += [0, 0, 0, 0]

        let proof = NTLMVerifier.ntProofString(ntowfv2: ntowfv2, serverChallenge: challenge.serverChallenge, blob: blob)
        let lm = carriesMIC
            ? [UInt8](repeating: 0, count: 24)
            : AuthCrypto.hmacMD5(key: ntowfv2, data: challenge.serverChallenge + clientChallenge) + clientChallenge
        return V2Response(ntowfv2: ntowfv2, ntResponse: proof + blob, lmResponse: lm,
                          sessionBaseKey: AuthCrypto.hmacMD5(key: ntowfv2, data: proof), carriesMIC: carriesMIC)
    }

    /// The AUTHENTICATE: an 88-byte header (fields, flags, Version, MIC), then domain,
    /// user, workstation, LM and NT responses. Names go in UTF-16LE unless the server chose
    /// OEM, which carries printable ASCII only.
    static func authenticate(negotiate: [UInt8], challenge: NTLMServerChallenge, user: String, domain: String,
                             workstation: String, response: V2Response) throws(ClientAuthError) -> [UInt8] {
        let unicode = challenge.flags.contains(.unicode) || !challenge.flags.contains(.oem)
        func encode(_ text: String, _ part: String) throws(ClientAuthError) -> [UInt8] {
            if unicode { return NTLMWire.encodeUTF16LE(text) }
            guard text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { throw .badCredentials(part) }
            return Array(text.utf8)
        }
        let names = try [encode(domain, "domain"), encode(user, "user"), encode(workstation, "workstation")]
        guard names.allSatisfy({ $0.count <= NTLMAuthenticateMessage.maxNameLength }) else {
            throw .badCredentials("user")
        }
        var flags = challenge.flags.intersection(negotiateFlags.subtracting([.unicode, .oem]))
        flags.formUnion([unicode ? NTLMNegotiateFlags.unicode : .oem, .ntlm, .version])
        if challenge.flags.contains(.targetInfo) { flags.insert(.targetInfo) }

        let headerLength = 88
        // Field order in the header: LM, NT, domain, user, workstation, session key.
        let payloads = [response.lmResponse, response.ntResponse, names[0], names[1], names[2], []]
        var offsets: [Int] = []
        var next = headerLength
        // Payload order: names first, then responses, as Windows lays them out.
        for index in [2, 3, 4, 0, 1, 5] {
            offsets.append(next)
            next += payloads[index].count
        }
        let offsetOf = [offsets[3], offsets[4], offsets[0], offsets[1], offsets[2], offsets[5]]

        var message = NTLMWire.signature
        NTLMWire.appendUInt32(NTLMWire.MessageType.authenticate.rawValue, to: &message)
        for (index, payload) in payloads.enumerated() {
            NTLMWire.appendUInt16(UInt16(payload.count), to: &message)
            NTLMWire.appendUInt16(UInt16(payload.count), to: &message)
            NTLMWire.appendUInt32(UInt32(offsetOf[index]), to: &message)
        }
        NTLMWire.appendUInt32(flags.rawValue, to: &message)
        message += version
        message += [UInt8](repeating: 0, count: 16)            // MIC, filled in below
        for index in [2, 3, 4, 0, 1, 5] { message += payloads[index] }

        if response.carriesMIC {
            let mic = NTLMVerifier.mic(exportedSessionKey: response.sessionBaseKey, negotiate: negotiate,
                                       challenge: challenge.bytes, authenticateWithZeroMIC: message)
            message.replaceSubrange(72..<88, with: mic)
        }
        return message
    }

    private static func appendAVPair(_ id: UInt16, _ value: [UInt8], to bytes: inout [UInt8]) {
        NTLMWire.appendUInt16(id, to: &bytes)
        NTLMWire.appendUInt16(UInt16(value.count), to: &bytes)
        bytes += value
    }
}
