/// Why a host was refused by `HostNormalizer`.
public struct HostError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `.ambiguousHost` when the text could be read more than one way (IP-looking names,
    /// percent-encoding, userinfo, zone ids, raw IDN); `.badTarget` when it is simply broken.
    public var reason: ReasonCode
    /// A short human explanation for logs and config errors.
    public var detail: String

    /// Creates an error with its reason code and explanation.
    public init(reason: ReasonCode, detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(reason.rawValue): \(detail)" }
}
