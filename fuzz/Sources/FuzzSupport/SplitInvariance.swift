/// What a reader makes of its input must not depend on where the input was split into
/// reads: a connection gets whatever the kernel hands it.
public enum SplitInvariance {
    /// `read(cuts)` on the input whole (no cuts), split at places derived from it, and, up
    /// to `byteByByteLimit` bytes, one byte per read: all must agree. Returns the first.
    public static func check<Outcome: Equatable>(_ input: [UInt8], byteByByteLimit: Int = 2048,
                                                  _ read: ([Int]) -> Outcome) -> Outcome {
        let whole = read([])
        let split = read(DerivedSplits.cuts(of: input))
        invariant(split == whole, "split reads gave \(split), one read gave \(whole)")
        if input.count <= byteByByteLimit {
            let single = read(Array(0..<input.count))
            invariant(single == whole, "byte-by-byte reads gave \(single), one read gave \(whole)")
        }
        return whole
    }
}
