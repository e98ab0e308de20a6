/// Bounds-checked reads of NTLM messages (MS-NLMP §2.2): little-endian integers and
/// `(Len, MaxLen, BufferOffset)` payload fields.
///
/// Every payload field must lie wholly inside the message and after its fixed header;
/// arithmetic is done in `Int` from 16/32-bit values, so no offset plus length can wrap.
enum NTLMWire {
    static let signature: [UInt8] = Array("NTLMSSP".utf8) + [0]

    enum MessageType: UInt32 {
        case negotiate = 1
        case challenge = 2
        case authenticate = 3
    }

    /// Checks the signature and returns the message type field (any value).
    static func messageType(_ message: [UInt8]) throws(AuthError) -> UInt32 {
        guard message.count >= 12 else { throw .truncated }
        guard message[0..<8].elementsEqual(signature) else { throw .badSignature }
        return uint32(message, at: 8)
    }

    static func uint16(_ bytes: [UInt8], at offset: Int) -> UInt16 {
        UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }

    static func appendUInt16(_ value: UInt16, to bytes: inout [UInt8]) {
        bytes.append(UInt8(truncatingIfNeeded: value))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    }

    static func appendUInt32(_ value: UInt32, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    static func appendUInt64(_ value: UInt64, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    /// The payload a field descriptor at `descriptorOffset` points to. An empty field's
    /// offset is not looked at (clients put anything there). A non-empty field must start
    /// at or after `headerEnd`, end within the message, and be at most `maxLength` bytes.
    static func field(_ message: [UInt8], descriptorAt descriptorOffset: Int, headerEnd: Int,
                      maxLength: Int, name: String) throws(AuthError) -> [UInt8] {
        let length = Int(uint16(message, at: descriptorOffset))
        let offset = Int(uint32(message, at: descriptorOffset + 4))
        if length == 0 { return [] }
        guard length <= maxLength, offset >= headerEnd, offset <= message.count,
              length <= message.count - offset
        else { throw .badField(name) }
        return Array(message[offset..<(offset + length)])
    }

    /// Where the payload begins: the lowest offset of any non-empty field among the
    /// descriptors at `descriptors`, or the message length when all are empty.
    static func payloadStart(_ message: [UInt8], descriptors: [Int]) -> Int {
        descriptors.reduce(message.count) { lowest, descriptor in
            uint16(message, at: descriptor) == 0 ? lowest : min(lowest, Int(uint32(message, at: descriptor + 4)))
        }
    }

    /// Strict UTF-16LE: even length, no unpaired surrogates, no NULs or other controls.
    static func decodeUTF16LE(_ bytes: [UInt8], name: String) throws(AuthError) -> String {
        guard bytes.count % 2 == 0 else { throw .badField(name) }
        let units = stride(from: 0, to: bytes.count, by: 2).map { UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8 }
        var text = ""
        var iterator = units.makeIterator()
        var decoder = UTF16()
        decoding: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): text.unicodeScalars.append(scalar)
            case .emptyInput: break decoding
            case .error: throw .badUTF8
            }
        }
        guard !AuthSyntax.containsControl(text) else { throw .controlCharacter }
        return text
    }

    /// OEM strings: this relay accepts printable ASCII only, since the client's code page
    /// is unknown.
    static func decodeOEM(_ bytes: [UInt8], name: String) throws(AuthError) -> String {
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { throw .badField(name) }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func encodeUTF16LE(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for unit in text.utf16 { appendUInt16(unit, to: &bytes) }
        return bytes
    }
}
