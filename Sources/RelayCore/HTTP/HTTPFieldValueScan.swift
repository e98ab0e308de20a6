/// Walks a field value's bytes to the first one that may not appear in a field value,
/// eight at a time while they are plain ASCII, since values are long and almost always are.
enum HTTPFieldValueScan {
    /// The offset of the first byte at or after `from` that `HTTPBytes.isFieldValueByte`
    /// refuses, and whether any byte before it was non-ASCII (obs-text: read as UTF-8 when
    /// it is, kept byte for byte otherwise). The caller guarantees such a byte exists before
    /// `limit` (a CR: the field line's own, which stops the walk, lies at or before it);
    /// whole words are read only below `limit`.
    static func scan(_ base: UnsafePointer<UInt8>, from: Int, limit: Int) -> (stop: Int, nonASCII: Bool) {
        var j = from
        var nonASCII = false
        while true {
            while j &+ 8 <= limit && isPlainWord(UnsafeRawPointer(base + j).loadUnaligned(as: UInt64.self)) {
                j &+= 8
            }
            while isPlain(base[j]) { j &+= 1 }
            let b = base[j]
            guard b == HTTPBytes.htab || b >= 0x80 else { return (j, nonASCII) }
            nonASCII = nonASCII || b >= 0x80
            j &+= 1
        }
    }

    /// SP or VCHAR (0x20...0x7E): the field value bytes that need no further thought.
    static func isPlain(_ b: UInt8) -> Bool { b &- 0x20 < 0x5F }

    /// Whether every byte of `word` is plain: none below 0x20 and none above 0x7E, by the
    /// classic SWAR "has less than" / "has more than" tests (exact as to whether such a byte
    /// exists, which is all that is asked).
    static func isPlainWord(_ word: UInt64) -> Bool {
        let below = (word &- ByteWords.ones &* 0x20) & ~word
        let above = (word &+ ByteWords.ones &* 0x01) | word
        return (below | above) & ByteWords.highBits == 0
    }
}
