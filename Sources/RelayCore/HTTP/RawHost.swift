/// The host of a request target exactly as the client wrote it, before normalization.
///
/// Brackets around an IPv6 literal are stripped and remembered in `bracketed`, because the
/// normalizer must know the client claimed an IPv6 literal (only bracketed text may be one).
public struct RawHost: Equatable, Hashable, Sendable {
    public var text: String
    public var bracketed: Bool

    /// Creates a raw host; `text` excludes the brackets.
    public init(text: String, bracketed: Bool = false) {
        self.text = text
        self.bracketed = bracketed
    }
}
