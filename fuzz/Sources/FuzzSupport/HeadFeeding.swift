import RelayCore

/// Feeds a head parser the way a connection reads: the accumulated buffer grows to each cut,
/// then to the whole input, and the first verdict stands.
public enum HeadFeeding {
    /// The verdict on `input` read in pieces ending at `cuts`; `parse` is the parser's
    /// `parse`, called on each accumulated prefix.
    public static func verdict<Head>(_ input: [UInt8], cuts: [Int],
                                     _ parse: (UnsafeRawBufferPointer) -> HeadParseResult<Head>) -> HeadParseResult<Head> {
        input.withUnsafeBytes { whole in
            for end in cuts + [input.count] {
                let result = parse(UnsafeRawBufferPointer(rebasing: whole[0..<end]))
                if case .needMore = result { continue }
                return result
            }
            return .needMore
        }
    }
}
