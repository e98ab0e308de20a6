#if canImport(Glibc)
import Glibc
#endif

/// The client side of NTLMv2 (MS-NLMP): a fixed NEGOTIATE message, and an AUTHENTICATE
/// message computed from each CHALLENGE. No MIC, no session key: a proxy authenticates the
/// connection and signs nothing.
struct NTLMResponder {
    let user: String
    /// MD4(UTF-16LE(password)), computed once at startup.
    let ntHash: [UInt8]
    let hashes: Hashes
    private var ntowfCache: (domain: String, key: [UInt8])?

    /// UNICODE | OEM | REQUEST_TARGET | NTLM | ALWAYS_SIGN | EXTENDED_SESSIONSECURITY.
    static let negotiateFlags: UInt32 = 0x0008_8207
    static let signature: [UInt8] = Array("NTLMSSP".utf8) + [0]

    /// NEGOTIATE_MESSAGE with empty domain and workstation fields.
    static let negotiateMessage: [UInt8] = {
        var message = signature + le32(1) + le32(negotiateFlags)
        message += le16(0) + le16(0) + le32(32)
        message += le16(0) + le16(0) + le32(32)
        return message
    }()

    init(user: String, ntHash: [UInt8], hashes: Hashes) {
        self.user = user
        self.ntHash = ntHash
        self.hashes = hashes
    }

    /// The AUTHENTICATE_MESSAGE answering `challengeMessage`; the domain is the target
    /// name the proxy sent.
    mutating func authenticate(_ challengeMessage: [UInt8]) throws -> [UInt8] {
        let m = challengeMessage
        guard m.count >= 32, Array(m[0..<8]) == Self.signature, Self.u32(m, 8) == 2 else {
            throw ProxyAuthError(description: "NTLM: not a CHALLENGE message (\(m.count) bytes)")
        }
        let flags = Self.u32(m, 20)
        let serverChallenge = Array(m[24..<32])
        let unicode = flags & 1 != 0
        // squid's ntlm_fake_auth sends its target name with an uninitialised offset: a name
        // outside the message is read as no domain (the fake helper accepts any), rather
        // than failing every tunnel against squid's best-case NTLM.
        let targetName = (try? Self.field(m, at: 12)) ?? []
        let domain = unicode ? String(decoding: Self.utf16Units(targetName), as: UTF16.self)
                             : String(decoding: targetName, as: UTF8.self)
        let hasTargetInfo = flags & 0x0080_0000 != 0 && m.count >= 48
        let targetInfo = hasTargetInfo ? try Self.field(m, at: 40) : []

        let ntowf: [UInt8]
        if let cached = ntowfCache, cached.domain == domain {
            ntowf = cached.key
        } else {
            ntowf = hashes.hmacMD5(key: ntHash, Self.utf16le(user.uppercased() + domain))
            ntowfCache = (domain, ntowf)
        }
        let clientChallenge = randomBytes(8)
        // FILETIME: 100 ns ticks since 1601-01-01.
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let filetime = (UInt64(now.tv_sec) + 11_644_473_600) * 10_000_000 + UInt64(now.tv_nsec) / 100
        var blob: [UInt8] = [1, 1, 0, 0, 0, 0, 0, 0]
        blob += Self.le64(filetime) + clientChallenge + le32(0) + targetInfo + le32(0)
        let ntProof = hashes.hmacMD5(key: ntowf, serverChallenge + blob)
        let ntResponse = ntProof + blob
        let lmResponse = hashes.hmacMD5(key: ntowf, serverChallenge + clientChallenge) + clientChallenge

        let domainBytes = Self.utf16le(domain)
        let userBytes = Self.utf16le(user)
        var payload: [UInt8] = []
        var header = Self.signature + le32(3)
        func append(_ bytes: [UInt8]) -> [UInt8] {
            let offset = 64 + payload.count
            payload += bytes
            return le16(UInt16(bytes.count)) + le16(UInt16(bytes.count)) + le32(UInt32(offset))
        }
        // Field order in the header: LM, NT, domain, user, workstation, session key.
        let lmField = append(lmResponse)
        let ntField = append(ntResponse)
        let domainField = append(domainBytes)
        let userField = append(userBytes)
        let workstationField = append([])
        let keyField = append([])
        header += lmField + ntField + domainField + userField + workstationField + keyField
        header += le32((flags & 0x0080_0000) | Self.negotiateFlags & ~2)
        return header + payload
    }

    private static func field(_ m: [UInt8], at offset: Int) throws -> [UInt8] {
        let length = Int(u16(m, offset))
        let start = Int(u32(m, offset + 4))
        guard length == 0 || (start <= m.count && length <= m.count - start) else {
            throw ProxyAuthError(description: "NTLM: CHALLENGE field at \(offset) out of bounds")
        }
        return length == 0 ? [] : Array(m[start..<(start + length)])
    }

    private static func u16(_ m: [UInt8], _ i: Int) -> UInt16 { UInt16(m[i]) | UInt16(m[i + 1]) << 8 }
    private static func u32(_ m: [UInt8], _ i: Int) -> UInt32 { UInt32(u16(m, i)) | UInt32(u16(m, i + 2)) << 16 }
    private static func le64(_ v: UInt64) -> [UInt8] { le32(UInt32(truncatingIfNeeded: v)) + le32(UInt32(v >> 32)) }
    private static func utf16Units(_ bytes: [UInt8]) -> [UInt16] {
        stride(from: 0, to: bytes.count - 1, by: 2).map { UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8 }
    }
    static func utf16le(_ text: String) -> [UInt8] { text.utf16.flatMap { le16($0) } }
}

private func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8)] }
private func le32(_ v: UInt32) -> [UInt8] { le16(UInt16(v & 0xffff)) + le16(UInt16(v >> 16)) }
