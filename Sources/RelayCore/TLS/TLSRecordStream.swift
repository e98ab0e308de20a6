/// One direction of a tunnel while the inspector holds its bytes: what arrived and was not yet
/// forwarded, how far it has been read as TLS records, and a handshake message whose records
/// have arrived only in part.
struct TLSRecordStream: Sendable {
    /// TLS record content types (RFC 8446 §5.1).
    enum ContentType: UInt8 {
        case changeCipherSpec = 0x14
        case alert = 0x15
        case handshake = 0x16
        case applicationData = 0x17
    }

    /// A complete record inside `held`.
    struct Record {
        var type: ContentType
        var fragment: ArraySlice<UInt8>
        /// Where the record ends in `held`: forwarding up to here forwards it whole.
        var end: Int
    }

    /// A complete handshake message: its type and body.
    struct Message {
        var type: UInt8
        var body: ArraySlice<UInt8>
    }

    /// Largest plaintext fragment (RFC 8446 §5.1); protected records may add 2 KiB (RFC 5246 §6.2.3).
    static let maxFragment = 1 << 14
    static let maxProtectedFragment = (1 << 14) + 2048

    /// Bytes received and not yet forwarded.
    private(set) var held: [UInt8] = []
    /// Where the first record not yet read starts in `held`.
    private(set) var unread = 0
    /// The start of a handshake message (its header included) whose end is still to come.
    private(set) var partialMessage: [UInt8] = []

    /// Bytes that are part of no complete record, or of a message not yet complete: at an
    /// end of stream they are something cut short, never yet judged.
    var hasIncompleteBytes: Bool { unread < held.count || !partialMessage.isEmpty }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        held.append(contentsOf: bytes)
    }

    /// The next complete record that ends within the first `limit` held bytes; nil until one does.
    mutating func nextRecord(limit: Int) throws(TLSInspectionRefusal) -> Record? {
        guard held.count - unread >= 5 else { return nil }
        let header = held[unread..<(unread + 5)]
        let typeByte = header[unread]
        let version = UInt16(header[unread + 1]) << 8 | UInt16(header[unread + 2])
        let length = Int(header[unread + 3]) << 8 | Int(header[unread + 4])
        guard let type = ContentType(rawValue: typeByte) else {
            throw .unexpected("a record of unknown content type \(typeByte)")
        }
        guard version >> 8 == 3 else {
            throw .malformed("a record of version 0x\(String(version, radix: 16))")
        }
        let maximum = type == .applicationData ? Self.maxProtectedFragment : Self.maxFragment
        guard length <= maximum else { throw .malformed("a \(type) record of \(length) bytes, over \(maximum)") }
        guard length > 0 || type == .applicationData else { throw .malformed("an empty \(type) record") }
        let end = unread + 5 + length
        guard end <= held.count, end <= limit else { return nil }
        defer { unread = end }
        return Record(type: type, fragment: held[(unread + 5)..<end], end: end)
    }

    /// Adds a handshake record's fragment to the message being reassembled and returns every
    /// message it completes. A message that could never fit the inspection buffer is an
    /// overflow, known from its header alone.
    mutating func messages(in fragment: ArraySlice<UInt8>) throws(TLSInspectionRefusal) -> [Message] {
        partialMessage.append(contentsOf: fragment)
        var messages: [Message] = []
        var start = 0
        while partialMessage.count - start >= 4 {
            let length = Int(partialMessage[start + 1]) << 16 | Int(partialMessage[start + 2]) << 8
                | Int(partialMessage[start + 3])
            guard length <= TLSInspectionSettings.bufferLimit else {
                throw TLSInspectionRefusal(reason: .tlsInspectionOverflow,
                                           detail: "a handshake message of \(length) bytes", alert: .handshakeFailure)
            }
            guard partialMessage.count - start - 4 >= length else { break }
            messages.append(Message(type: partialMessage[start],
                                    body: partialMessage[(start + 4)..<(start + 4 + length)]))
            start += 4 + length
        }
        // The bodies keep the bytes they slice alive; removing them here copies, never changes them.
        partialMessage.removeFirst(start)
        return messages
    }

    /// Takes the held bytes up to `end` (a record's end) for forwarding.
    mutating func forward(upTo end: Int) -> [UInt8] {
        let forwarded = Array(held[..<end])
        held.removeFirst(end)
        unread -= end
        return forwarded
    }

    /// Takes every held byte, and drops what was read of them.
    mutating func forwardAll() -> [UInt8] {
        defer { self = TLSRecordStream() }
        return held
    }

    /// Drops everything: the tunnel is refused.
    mutating func discard() {
        self = TLSRecordStream()
    }
}
