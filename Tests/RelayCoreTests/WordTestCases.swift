/// Words to hold an eight-bytes-at-a-time (SWAR) test to its bytes: every byte value at
/// every position of a word otherwise filled with one byte, for each filler, then random
/// words that mix `interesting` bytes with arbitrary ones.
enum WordTestCases {
    static func words(fillers: [UInt8], interesting: [UInt8], seed: UInt64, randomCount: Int = 100_000) -> [UInt64] {
        var words: [UInt64] = []
        words.reserveCapacity(fillers.count * 8 * 256 + randomCount)
        for filler in fillers {
            for position in 0..<8 {
                for b in UInt8.min...UInt8.max {
                    var word = UInt64(filler) &* 0x0101_0101_0101_0101
                    word &= ~(UInt64(0xFF) << (position * 8))
                    word |= UInt64(b) << (position * 8)
                    words.append(word)
                }
            }
        }
        var rng = SplitMix64(state: seed)
        for _ in 0..<randomCount {
            var word: UInt64 = 0
            for position in 0..<8 {
                let b = Bool.random(using: &rng) ? interesting.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
                word |= UInt64(b) << (position * 8)
            }
            words.append(word)
        }
        return words
    }

    /// True when `test` holds for each of the eight bytes of `word`.
    static func everyByte(of word: UInt64, _ test: (UInt8) -> Bool) -> Bool {
        (0..<8).allSatisfy { test(UInt8(truncatingIfNeeded: word >> ($0 * 8))) }
    }
}
