/// Why a request was refused before it reached a helper.
public struct HelperInputError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Code: String {
        case empty = "empty", tooLong = "too-long", controlCharacter = "control-character", quote = "quote"
    }

    private let code: Code
    private init(_ code: Code) { self.code = code }

    /// A user name (or continuation token) with nothing in it.
    public static let empty = HelperInputError(.empty)
    /// Longer than the helper protocol allows.
    public static let tooLong = HelperInputError(.tooLong)
    /// A CR, LF, NUL or other control character, which could end the line early.
    public static let controlCharacter = HelperInputError(.controlCharacter)
    /// A quote or backslash inside a Digest word, which would end the quoted word early.
    public static let quote = HelperInputError(.quote)

    /// Stable machine-readable code, e.g. `control-character`.
    public var description: String { code.rawValue }
}
