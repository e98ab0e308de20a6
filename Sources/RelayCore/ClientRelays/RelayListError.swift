/// Why a relay list (`--relay` arguments, `DYNRELAY_RELAYS`) was refused.
public struct RelayListError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: String, Sendable {
        case emptyList = "empty-relay-list"
        case badURL = "bad-relay-url"
        case badPriority = "bad-relay-priority"
        case unknownParameter = "unknown-relay-parameter"
        case duplicateRelay = "duplicate-relay"
    }

    private let code_: Code
    /// The list entry at fault, when there is one.
    public let entry: String?
    /// For `bad-relay-url`, why the URL did not parse (nil when it parsed but has a path).
    public let urlError: ClientURLError?

    private init(_ code: Code, entry: String?, urlError: ClientURLError? = nil) {
        self.code_ = code
        self.entry = entry
        self.urlError = urlError
    }

    /// The stable machine-readable code, e.g. `bad-relay-priority`.
    public var code: String { code_.rawValue }

    /// `code: entry (cause)`.
    public var description: String {
        var text = code
        if let entry { text += ": '\(entry)'" }
        if let urlError { text += " (\(urlError))" }
        return text
    }

    /// No relay at all.
    public static let emptyList = RelayListError(.emptyList, entry: nil)
    /// Not `http://host[:port]` or `https://host[:port]` (a path, query, other scheme, ...).
    public static func badURL(_ entry: String, _ error: ClientURLError?) -> RelayListError {
        RelayListError(.badURL, entry: entry, urlError: error)
    }
    /// `priority=` without a whole number from 1 up.
    public static func badPriority(_ entry: String) -> RelayListError { RelayListError(.badPriority, entry: entry) }
    /// A `;name=value` other than `priority`.
    public static func unknownParameter(_ entry: String) -> RelayListError { RelayListError(.unknownParameter, entry: entry) }
    /// The same scheme, host and port twice: its failures and back-off would be counted twice.
    public static func duplicateRelay(_ entry: String) -> RelayListError { RelayListError(.duplicateRelay, entry: entry) }
}
