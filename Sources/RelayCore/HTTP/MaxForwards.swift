/// `Max-Forwards` on TRACE and OPTIONS (RFC 9110 7.6.2): a hop count each intermediary
/// decrements, and answers the request itself when it reaches zero. Other methods may
/// ignore it (the same section), and do here: their field is forwarded untouched.
public enum MaxForwards {
    /// The largest count forwarded, as an IP TTL is capped: RFC 9110 lets a recipient
    /// forward the lesser of the received count minus one and its own maximum.
    public static let limit: UInt64 = 255

    /// Whether `method` reads Max-Forwards.
    public static func applies(to method: String) -> Bool {
        method == "TRACE" || method == "OPTIONS"
    }

    /// The received count (nil without the field). Two fields or a value other than
    /// 1*DIGIT are `.badHeader`: two readers could take different hop counts from them.
    /// A count too long for 64 bits is as good as `limit + 1`.
    public static func parse(_ headers: HTTPHeaders) -> Result<UInt64?, ReasonCode> {
        let values = headers.values("Max-Forwards")
        guard let value = values.first else { return .success(nil) }
        guard values.count == 1, !value.isEmpty, value.utf8.allSatisfy(HTTPBytes.isDigit) else {
            return .failure(.badHeader)
        }
        return .success(min(HTTPBytes.parseDecimal(value.utf8) ?? .max, limit + 1))
    }

    /// The count to forward for a received count above zero.
    public static func forwarded(_ received: UInt64) -> UInt64 {
        min(received - 1, limit)
    }
}
