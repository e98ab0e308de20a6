/// A NTLM CHALLENGE message, type 2 (MS-NLMP §2.2.1.2), as the client reads it.
///
/// Layout: signature, type, TargetName field (12), flags (20), server challenge (24),
/// reserved (32), TargetInfo field (40), optional Version (48). NTLMv2 needs the target
/// info: the AV pairs are read in order, each must lie inside the field, ids may not
/// repeat, and the list must end with MsvAvEOL. Every bound failure is `bad-challenge`
/// naming the field.
struct NTLMServerChallenge: Sendable, Equatable {
    /// Longest CHALLENGE accepted, in bytes.
    static let maxLength = 4096

    /// The message exactly as received: the MIC covers it.
    let bytes: [UInt8]
    let flags: NTLMNegotiateFlags
    let serverChallenge: [UInt8]
    /// The AV pairs before MsvAvEOL, in the order received.
    let avPairs: [(id: UInt16, value: [UInt8])]
    /// MsvAvTimestamp (FILETIME), when the server sent one.
    let timestamp: UInt64?

    static func == (lhs: NTLMServerChallenge, rhs: NTLMServerChallenge) -> Bool {
        lhs.bytes == rhs.bytes
    }

    init(parsing message: [UInt8]) throws(ClientAuthError) {
        guard message.count <= Self.maxLength else { throw .badChallenge("NTLM length") }
        let type: UInt32
        do throws(AuthError) {
            type = try NTLMWire.messageType(message)
        } catch {
            throw .badChallenge("NTLM \(error.code)")
        }
        guard type == NTLMWire.MessageType.challenge.rawValue else { throw .badChallenge("NTLM message type") }
        let headerEnd = 48
        guard message.count >= headerEnd else { throw .badChallenge("NTLM truncated") }
        bytes = message
        flags = NTLMNegotiateFlags(rawValue: NTLMWire.uint32(message, at: 20))
        serverChallenge = Array(message[24..<32])
        let info: [UInt8]
        do throws(AuthError) {
            info = try NTLMWire.field(message, descriptorAt: 40, headerEnd: headerEnd, maxLength: Self.maxLength,
                                      name: "TargetInfo")
        } catch {
            throw .badChallenge("TargetInfo")
        }
        avPairs = try Self.readAVPairs(info)
        timestamp = avPairs.first { $0.id == 7 }.map { pair -> UInt64? in
            pair.value.count == 8 ? (0..<8).reduce(UInt64(0)) { $0 | UInt64(pair.value[$1]) << (8 * $1) } : nil
        } ?? nil
        if avPairs.contains(where: { $0.id == 7 }), timestamp == nil { throw .badChallenge("MsvAvTimestamp") }
    }

    private static func readAVPairs(_ info: [UInt8]) throws(ClientAuthError) -> [(id: UInt16, value: [UInt8])] {
        guard !info.isEmpty else { throw .badChallenge("TargetInfo") }
        var pairs: [(id: UInt16, value: [UInt8])] = []
        var index = 0
        while info.count - index >= 4 {
            let id = NTLMWire.uint16(info, at: index)
            let length = Int(NTLMWire.uint16(info, at: index + 2))
            index += 4
            if id == 0 { return pairs }
            guard length <= info.count - index, !pairs.contains(where: { $0.id == id }) else {
                throw .badChallenge("TargetInfo")
            }
            pairs.append((id, Array(info[index..<(index + length)])))
            index += length
        }
        throw .badChallenge("TargetInfo")
    }
}
