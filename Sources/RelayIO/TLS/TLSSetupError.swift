/// A TLS context that could not be built: a certificate, key or CA file that does not load,
/// a key that does not match its certificate, or versions OpenSSL refuses. Carries the file
/// and OpenSSL's whole error stack, for `check-config` and a refused reload.
public struct TLSSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What failed, as a stable code the caller may branch on.
    public enum Kind: Sendable, Equatable {
        case certificate
        case privateKey
        case keyMismatch
        case caFile
        case versions
        /// OpenSSL could not allocate a context or connection, or refused a setting.
        case openSSL
    }

    /// What failed.
    public let kind: Kind
    /// The file concerned, when one is.
    public let file: String?
    /// What was being done, e.g. "cannot read certificate".
    public let step: String
    /// OpenSSL's error stack, joined, or nil when it said nothing.
    public let openSSLErrors: String?

    init(_ kind: Kind, _ step: String, file: String? = nil, errors: OpenSSLErrorStack = .drain()) {
        self.kind = kind
        self.file = file
        self.step = step
        self.openSSLErrors = errors.text
    }

    /// "cannot read certificate /x.pem: error:…", "key /k.pem does not match certificate /c.pem".
    public var description: String {
        var text = step
        if let file { text += " \(file)" }
        if let openSSLErrors { text += ": \(openSSLErrors)" }
        return text
    }
}
