/// A parsed NTLM NEGOTIATE message, type 1 (MS-NLMP §2.2.1.1).
///
/// Only the flags matter to the server. Older clients send the 16-byte form without the
/// domain and workstation fields; when those fields are present and non-empty they must
/// lie inside the message, after the header, like every other NTLM field.
public struct NTLMNegotiateMessage: Sendable, Equatable {
    /// Longest NEGOTIATE accepted, in bytes.
    public static let maxLength = 1024

    /// The flags the client asks for.
    public let flags: NTLMNegotiateFlags

    /// Parses and checks a type-1 message.
    public init(parsing message: [UInt8]) throws(AuthError) {
        guard message.count <= Self.maxLength else { throw .tooLarge }
        guard try NTLMWire.messageType(message) == NTLMWire.MessageType.negotiate.rawValue else {
            throw .badMessageType
        }
        guard message.count >= 16 else { throw .truncated }
        flags = NTLMNegotiateFlags(rawValue: NTLMWire.uint32(message, at: 12))
        if message.count >= 32 {
            _ = try NTLMWire.field(message, descriptorAt: 16, headerEnd: 32, maxLength: 256, name: "DomainName")
            _ = try NTLMWire.field(message, descriptorAt: 24, headerEnd: 32, maxLength: 256, name: "Workstation")
        } else if message.count > 16 {
            throw .truncated
        }
    }
}
