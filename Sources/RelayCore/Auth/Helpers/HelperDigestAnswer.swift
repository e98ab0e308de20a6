/// A Digest helper's answer to `"user":"realm"`.
public enum HelperDigestAnswer: Sendable, Equatable, CustomStringConvertible {
    /// `OK ha1=<hex>`: the raw `H(user:realm:password)` bytes; the relay checks the response.
    /// Password-equivalent: never log it.
    case ha1([UInt8])
    /// `ERR`: no such user (or none in that realm); the helper's message when it gave one.
    case err(message: String?)
    /// `BH`, a missing or malformed `ha1`, or the helper died, timed out or cannot start.
    case helperBroken(reason: String)
    /// Every helper channel is busy and the wait queue is full.
    case overloaded
    /// Refused before reaching the helper (a quote or control character in a word).
    case invalidInput(HelperInputError)

    /// Names the case without the HA1 bytes, so a stray `print` or log cannot leak one.
    public var description: String {
        switch self {
        case .ha1(let bytes): "ha1(\(bytes.count) bytes)"
        case .err(let message): "err(\(message ?? "-"))"
        case .helperBroken(let reason): "helperBroken(\(reason))"
        case .overloaded: "overloaded"
        case .invalidInput(let error): "invalidInput(\(error))"
        }
    }
}

extension HelperDigestAnswer {
    /// Reads a Digest answer: `OK ha1=<hex>` (digest_file_auth quotes the hex), `ERR`, `BH`.
    public init(reply: HelperReply) {
        switch HelperLookup(reply: reply) {
        case .ok(let reply):
            // MD5 (16 bytes) is all Squid's Digest helpers produce; SHA-256 (32) is allowed
            // for helpers that know the realm uses it.
            guard let hex = reply.notes["ha1"], let bytes = AuthHex.decode(hex), bytes.count == 16 || bytes.count == 32 else {
                self = .helperBroken(reason: "OK without a valid ha1")
                return
            }
            self = .ha1(bytes)
        case .err(let message): self = .err(message: message)
        case .broken(let reason): self = .helperBroken(reason: reason)
        }
    }
}
