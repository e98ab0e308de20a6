import RelayCore

/// The one account, server challenge and NEGOTIATE of MS-NLMP §4.2, and AUTHENTICATE
/// messages laid out the way clients send them.
enum NTLMLayout {
    static let user = "User"
    /// NTOWFv1("Password") (§4.2.2.1.2).
    static let ntHashOfPassword: [UInt8] = [0xa4, 0xf4, 0x9c, 0x40, 0x65, 0x10, 0xbd, 0xca,
                                            0xb6, 0x82, 0x4e, 0xe7, 0xc3, 0x0f, 0xd8, 0x52]
    static let serverChallenge: [UInt8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]
    static let negotiateFlags: NTLMNegotiateFlags = [.unicode, .ntlm, .requestTarget, .alwaysSign, .targetInfo,
                                                     .extendedSessionSecurity]
    static let negotiate = Array("NTLMSSP".utf8) + [0, 1, 0, 0, 0] + le32(negotiateFlags.rawValue) + [UInt8](repeating: 0, count: 16)

    static func ntHash(_ user: String, _ domain: String) -> [UInt8]? {
        user.uppercased() == Self.user.uppercased() ? ntHashOfPassword : nil
    }

    static func handshake() -> NTLMHandshake {
        NTLMHandshake(configuration: .init(domain: "Domain", computerName: "Server"), challengeSource: { serverChallenge })
    }

    /// A 64-byte header, then domain, user, workstation, LM and NT responses, names in
    /// UTF-16LE or ASCII as the flags say.
    static func authenticate(_ message: NTLMAuthenticateMessage) -> [UInt8] {
        let unicode = message.flags.contains(.unicode)
        let encode: (String) -> [UInt8] = { text in
            unicode ? text.utf16.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] } : Array(text.utf8)
        }
        let fields = [message.lmChallengeResponse, message.ntChallengeResponse, encode(message.domain),
                      encode(message.user), encode(message.workstation), []]
        var header = Array("NTLMSSP".utf8) + [0, 3, 0, 0, 0]
        var payload: [UInt8] = []
        var offsets = [Int](repeating: 0, count: fields.count)
        for index in [2, 3, 4, 0, 1, 5] {
            offsets[index] = 64 + payload.count
            payload += fields[index]
        }
        for (field, offset) in zip(fields, offsets) {
            header += le16(UInt16(field.count)) + le16(UInt16(field.count)) + le32(UInt32(offset))
        }
        return header + le32(message.flags.rawValue) + payload
    }

    static func le16(_ value: UInt16) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
    }

    static func le32(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
}
