/// Places to split an input into reads, derived from the input itself, so a seed stays the
/// plain message it is (a real request, a real body) and the fuzzer still varies where the
/// reads end by varying the bytes.
public enum DerivedSplits {
    /// Up to `maxCuts` ascending offsets inside `0...bytes.count`.
    public static func cuts(of bytes: [UInt8], maxCuts: Int = 3) -> [Int] {
        // FNV-1a: cheap, and every byte moves every cut.
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        var cuts: [Int] = []
        for _ in 0..<Int(hash % UInt64(maxCuts + 1)) {
            hash = hash &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            cuts.append(Int((hash >> 33) % UInt64(bytes.count + 1)))
        }
        return cuts.sorted()
    }
}
