/// One `Set-Cookie` field value parsed as RFC 6265 §5.2 says, before the storage model
/// (§5.3) decides what to do with it. Attribute names are case-insensitive and, for each
/// attribute, the last valid occurrence wins; an invalid `Expires`, `Max-Age` or empty
/// `Domain` is ignored as if absent.
struct SetCookie: Equatable {
    var name: String
    var value: String
    /// From the last valid `Expires`, seconds since the epoch.
    var expires: Int64?
    /// From the last valid `Max-Age`, in seconds; zero or less means "already expired".
    var maxAge: Int64?
    /// Lowercased, its leading dot removed.
    var domain: String?
    /// nil when absent or not starting with `/`: both mean the default-path (§5.2.4).
    var path: String?
    var secure = false
    var httpOnly = false

    /// nil when §5.2 says to ignore the whole field (no `=` in the name-value pair, empty name).
    init?(parsing text: String) {
        let utf8 = text.utf8
        let semicolon = utf8.firstIndex(of: UInt8(ascii: ";")) ?? utf8.endIndex
        let pair = utf8[..<semicolon]
        guard let equals = pair.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        let name = Self.trimmed(pair[..<equals])
        guard !name.isEmpty else { return nil }
        self.name = String(decoding: name, as: UTF8.self)
        self.value = String(decoding: Self.trimmed(pair[pair.index(after: equals)...]), as: UTF8.self)
        guard semicolon < utf8.endIndex else { return }
        for av in utf8[utf8.index(after: semicolon)...].split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false) {
            let equals = av.firstIndex(of: UInt8(ascii: "=")) ?? av.endIndex
            let attributeName = String(decoding: Self.trimmed(av[..<equals]).map(HTTPBytes.asciiLowercased), as: UTF8.self)
            let attributeValue = equals < av.endIndex
                ? String(decoding: Self.trimmed(av[av.index(after: equals)...]), as: UTF8.self) : ""
            apply(attributeName, attributeValue)
        }
    }

    private mutating func apply(_ name: String, _ value: String) {
        switch name {
        case "expires":
            if let date = CookieDate.parse(value) { expires = date }
        case "max-age":
            if let seconds = Self.deltaSeconds(value) { maxAge = seconds }
        case "domain":
            guard !value.isEmpty else { return }
            var domain = Substring(value)
            if domain.hasPrefix(".") { domain = domain.dropFirst() }
            self.domain = String(decoding: domain.utf8.map(HTTPBytes.asciiLowercased), as: UTF8.self)
        case "path":
            path = value.hasPrefix("/") ? value : nil
        case "secure":
            secure = true
        case "httponly":
            httpOnly = true
        default:
            break
        }
    }

    /// §5.2.2: an optional `-` then digits only; out-of-range values saturate, since any
    /// delta beyond a few centuries means the same thing.
    private static func deltaSeconds(_ text: String) -> Int64? {
        var digits = Substring(text).utf8[...]
        let negative = digits.first == UInt8(ascii: "-")
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.allSatisfy(HTTPBytes.isDigit) else { return nil }
        var result: Int64 = 0
        for digit in digits {
            let (times10, overflow1) = result.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(digit - 0x30))
            if overflow1 || overflow2 { result = Int64.max; break }
            result = sum
        }
        return negative ? -result : result
    }

    /// WSP (SP and HTAB) removed from both ends (§5.2 step 4).
    private static func trimmed(_ bytes: Substring.UTF8View.SubSequence) -> Substring.UTF8View.SubSequence {
        var slice = bytes
        while let first = slice.first, HTTPBytes.isOWS(first) { slice = slice.dropFirst() }
        while let last = slice.last, HTTPBytes.isOWS(last) { slice = slice.dropLast() }
        return slice
    }
}
