/// A parsed NTLM AUTHENTICATE message, type 3 (MS-NLMP §2.2.1.3).
///
/// The fixed header is 64 bytes (Version and MIC, when present, follow it); every payload
/// field must lie inside the message and start at or after byte 64. Names are UTF-16LE
/// when the message's flags say Unicode, otherwise printable ASCII. Every field and the
/// whole message are bounded.
public struct NTLMAuthenticateMessage: Sendable, Equatable {
    /// Longest AUTHENTICATE accepted, in bytes (a 16 KiB header holds about 12 KiB).
    public static let maxLength = 12 * 1024
    /// Longest user, domain or workstation name, in encoded bytes.
    public static let maxNameLength = 512
    /// Longest NT challenge response (NTLMv2 responses carry the target info).
    public static let maxResponseLength = 4096

    /// The flags of the message.
    public let flags: NTLMNegotiateFlags
    /// LmChallengeResponse (the client challenge for NTLM2 session responses).
    public let lmChallengeResponse: [UInt8]
    /// NtChallengeResponse.
    public let ntChallengeResponse: [UInt8]
    /// The domain the client authenticates in.
    public let domain: String
    /// The user name.
    public let user: String
    /// The client's workstation name.
    public let workstation: String

    /// Parses and checks a type-3 message.
    public init(parsing message: [UInt8]) throws(AuthError) {
        guard message.count <= Self.maxLength else { throw .tooLarge }
        guard try NTLMWire.messageType(message) == NTLMWire.MessageType.authenticate.rawValue else {
            throw .badMessageType
        }
        let headerEnd = 64
        guard message.count >= headerEnd else { throw .truncated }
        flags = NTLMNegotiateFlags(rawValue: NTLMWire.uint32(message, at: 60))

        lmChallengeResponse = try NTLMWire.field(message, descriptorAt: 12, headerEnd: headerEnd,
                                                 maxLength: 24, name: "LmChallengeResponse")
        ntChallengeResponse = try NTLMWire.field(message, descriptorAt: 20, headerEnd: headerEnd,
                                                 maxLength: Self.maxResponseLength, name: "NtChallengeResponse")
        let domainBytes = try NTLMWire.field(message, descriptorAt: 28, headerEnd: headerEnd,
                                             maxLength: Self.maxNameLength, name: "DomainName")
        let userBytes = try NTLMWire.field(message, descriptorAt: 36, headerEnd: headerEnd,
                                           maxLength: Self.maxNameLength, name: "UserName")
        let workstationBytes = try NTLMWire.field(message, descriptorAt: 44, headerEnd: headerEnd,
                                                  maxLength: Self.maxNameLength, name: "Workstation")
        _ = try NTLMWire.field(message, descriptorAt: 52, headerEnd: headerEnd,
                               maxLength: 16, name: "EncryptedRandomSessionKey")

        if flags.contains(.unicode) {
            domain = try NTLMWire.decodeUTF16LE(domainBytes, name: "DomainName")
            user = try NTLMWire.decodeUTF16LE(userBytes, name: "UserName")
            workstation = try NTLMWire.decodeUTF16LE(workstationBytes, name: "Workstation")
        } else {
            domain = try NTLMWire.decodeOEM(domainBytes, name: "DomainName")
            user = try NTLMWire.decodeOEM(userBytes, name: "UserName")
            workstation = try NTLMWire.decodeOEM(workstationBytes, name: "Workstation")
        }
    }
}

extension NTLMAuthenticateMessage {
    /// What a token says about its account, for a caller that hands NTLM tokens to a helper
    /// rather than verifying them itself and must still count failures against the account.
    public enum Claim: Sendable, Equatable {
        /// Not an AUTHENTICATE (a NEGOTIATE, or too short to be any NTLM message with a
        /// response in it): it names nobody and proves nothing.
        case notAuthenticate
        /// An AUTHENTICATE naming this user (nil: anonymous).
        case user(String?)
        /// An AUTHENTICATE this parser refuses. A helper might still check its response, so
        /// it must not get it: a guess would go uncounted against the account.
        case malformed
    }

    /// Reads the claim of `token` (see `Claim`).
    public static func claim(in token: [UInt8]) -> Claim {
        do {
            let message = try NTLMAuthenticateMessage(parsing: token)
            return .user(message.user.isEmpty ? nil : message.user)
        } catch .badMessageType, .badSignature {
            return .notAuthenticate
        } catch .truncated where token.count < 64 {
            // Shorter than the AUTHENTICATE header: no response fields to check.
            return .notAuthenticate
        } catch {
            return .malformed
        }
    }

    /// Reads the claim of a Negotiate token: NTLM reaches a Negotiate acceptor bare (some
    /// clients fall back to it that way) or as SPNEGO's mechanism token. A Kerberos token
    /// names nobody. A token that carries the NTLM signature somewhere this reader cannot
    /// follow (SPNEGO that is not strict DER) is `malformed`: a laxer parser behind us
    /// might still check the response inside, and the guess would count against nobody.
    public static func claim(inNegotiateToken token: [UInt8]) -> Claim {
        if token.starts(with: NTLMWire.signature) { return claim(in: token) }
        if let inner = SPNEGOToken.mechanismToken(in: token), inner.starts(with: NTLMWire.signature) {
            return claim(in: Array(inner))
        }
        return containsSignature(token) ? .malformed : .notAuthenticate
    }

    private static func containsSignature(_ token: [UInt8]) -> Bool {
        let signature = NTLMWire.signature
        guard token.count >= signature.count else { return false }
        return (0...(token.count - signature.count)).contains { start in
            token[start] == signature[0] && token[start..<(start + signature.count)].elementsEqual(signature)
        }
    }
}

