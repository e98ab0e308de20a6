/// An NTLM CHALLENGE message, type 2 (MS-NLMP §2.2.1.2), built by the server.
///
/// Layout: 56-byte header (signature, type, TargetName field, flags, 8-byte server
/// challenge, reserved, TargetInfo field, zero Version), then the target name (the NetBIOS
/// domain) and the target info AV pairs: MsvAvNbDomainName, MsvAvNbComputerName,
/// MsvAvTimestamp, MsvAvEOL.
public struct NTLMChallengeMessage: Sendable, Equatable {
    /// Longest domain or computer name, in UTF-16LE bytes.
    public static let maxNameLength = 512

    /// The flags the server answers with.
    public let flags: NTLMNegotiateFlags
    /// The 8-byte server challenge.
    public let serverChallenge: [UInt8]
    /// The AV pairs sent as target info.
    public let targetInfo: [UInt8]
    /// The encoded message.
    public let bytes: [UInt8]

    /// Builds the challenge answering a client that asked for `requested`.
    ///
    /// - Parameters:
    ///   - serverChallenge: 8 fresh random bytes.
    ///   - domain: the NetBIOS domain name (target name and MsvAvNbDomainName).
    ///   - computerName: the NetBIOS computer name (MsvAvNbComputerName).
    ///   - unixTime: the server's clock, for MsvAvTimestamp.
    public init(answering requested: NTLMNegotiateFlags, serverChallenge: [UInt8], domain: String,
                computerName: String, unixTime: UInt64) {
        precondition(serverChallenge.count == 8, "an NTLM server challenge is 8 bytes")
        var flags: NTLMNegotiateFlags = [.ntlm, .targetTypeDomain, .targetInfo, .requestTarget]
        // MS-NLMP §3.2.5.1.1: Unicode when the client offers it, else OEM.
        flags.insert(requested.contains(.unicode) || !requested.contains(.oem) ? .unicode : .oem)
        flags.formUnion(requested.intersection([.extendedSessionSecurity, .alwaysSign, .bits128, .bits56]))
        self.flags = flags
        self.serverChallenge = serverChallenge

        var info: [UInt8] = []
        func avPair(_ id: UInt16, _ value: [UInt8]) {
            NTLMWire.appendUInt16(id, to: &info)
            NTLMWire.appendUInt16(UInt16(value.count), to: &info)
            info += value
        }
        let domainUTF16 = NTLMWire.encodeUTF16LE(domain)
        let computerUTF16 = NTLMWire.encodeUTF16LE(computerName)
        precondition(domainUTF16.count <= Self.maxNameLength && computerUTF16.count <= Self.maxNameLength,
                     "NTLM domain and computer names are at most 256 UTF-16 units")
        avPair(2, domainUTF16)                                  // MsvAvNbDomainName
        avPair(1, computerUTF16)                                // MsvAvNbComputerName
        var fileTime: [UInt8] = []
        NTLMWire.appendUInt64(Self.fileTime(unixTime: unixTime), to: &fileTime)
        avPair(7, fileTime)                                     // MsvAvTimestamp
        avPair(0, [])                                           // MsvAvEOL
        targetInfo = info

        let targetName = flags.contains(.unicode) ? domainUTF16 : Array(domain.utf8)
        let headerLength = 56
        var message = NTLMWire.signature
        NTLMWire.appendUInt32(NTLMWire.MessageType.challenge.rawValue, to: &message)
        NTLMWire.appendUInt16(UInt16(targetName.count), to: &message)
        NTLMWire.appendUInt16(UInt16(targetName.count), to: &message)
        NTLMWire.appendUInt32(UInt32(headerLength), to: &message)
        NTLMWire.appendUInt32(flags.rawValue, to: &message)
        message += serverChallenge
        message += [UInt8](repeating: 0, count: 8)              // Reserved
        NTLMWire.appendUInt16(UInt16(info.count), to: &message)
        NTLMWire.appendUInt16(UInt16(info.count), to: &message)
        NTLMWire.appendUInt32(UInt32(headerLength + targetName.count), to: &message)
        message += [UInt8](repeating: 0, count: 8)              // Version: not sent
        message += targetName
        message += info
        bytes = message
    }

    /// Windows FILETIME: 100 ns ticks since 1601-01-01 UTC.
    static func fileTime(unixTime: UInt64) -> UInt64 {
        (unixTime + 11_644_473_600) &* 10_000_000
    }
}
