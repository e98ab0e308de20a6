/// Eight bytes tested at once in a 64-bit word (SWAR), for the scans that walk long header
/// values: a test per word instead of per byte.
enum ByteWords {
    /// 0x01 in every byte: times `c`, `c` in every byte.
    static let ones: UInt64 = 0x0101_0101_0101_0101
    /// The top bit of every byte.
    static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// True when some byte of `word` is zero. Exact as to whether one exists (a borrow can
    /// only mark bytes above a zero byte), which is all that is asked.
    static func hasZeroByte(_ word: UInt64) -> Bool {
        (word &- ones) & ~word & highBits != 0
    }

    /// True when some byte of `word` equals `byte`: that byte is zero in `word ^ byte…byte`.
    static func contains(_ word: UInt64, _ byte: UInt8) -> Bool {
        hasZeroByte(word ^ (ones &* UInt64(byte)))
    }
}
