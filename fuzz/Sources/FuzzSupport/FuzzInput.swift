/// A fuzz input read as a sequence of choices, for targets whose input is a script rather
/// than one message. Past the end every read answers nil or empty, so any prefix of a
/// script is itself a script (libFuzzer's truncations stay meaningful).
public struct FuzzInput {
    /// The whole input.
    public let bytes: [UInt8]
    /// Where the next read starts.
    public private(set) var position = 0

    /// Copies the `size` bytes libFuzzer handed over.
    public init(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        bytes = Array(UnsafeBufferPointer(start: data, count: size))
    }

    /// Wraps bytes already in hand (regression tests replay scripts this way).
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Whether every byte has been read.
    public var isExhausted: Bool { position >= bytes.count }

    /// The next byte, or nil at the end.
    public mutating func byte() -> UInt8? {
        guard position < bytes.count else { return nil }
        defer { position += 1 }
        return bytes[position]
    }

    /// A number below `count` (which must be positive), or nil at the end.
    public mutating func below(_ count: Int) -> Int? {
        byte().map { Int($0) % count }
    }

    /// One of `options` (which must not be empty), or nil at the end.
    public mutating func pick<T>(_ options: [T]) -> T? {
        below(options.count).map { options[$0] }
    }

    /// A length byte, then up to that many bytes (fewer at the end; a length byte above
    /// `maxLength` wraps into range so every byte value means something).
    public mutating func chunk(maxLength: Int = 255) -> [UInt8] {
        guard let length = below(maxLength + 1) else { return [] }
        let end = min(bytes.count, position + length)
        defer { position = end }
        return Array(bytes[position..<end])
    }

    /// Everything not read yet.
    public mutating func rest() -> [UInt8] {
        defer { position = bytes.count }
        return position < bytes.count ? Array(bytes[position...]) : []
    }
}
