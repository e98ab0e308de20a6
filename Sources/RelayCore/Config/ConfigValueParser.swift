/// A value-level complaint; the directive parser adds the location.
struct ConfigValueError: Error, ExpressibleByStringInterpolation {
    let message: String

    init(stringLiteral value: String) {
        message = value
    }

    init(stringInterpolation: DefaultStringInterpolation) {
        message = String(stringInterpolation: stringInterpolation)
    }
}

/// Parsers for the value syntaxes of the config language. Each returns nil or a message;
/// the directive parser attaches the location.
enum ConfigValueParser {
    /// A decimal without sign or leading zeros ("0" itself is fine), bounded so it
    /// cannot overflow.
    static func decimal<S: StringProtocol>(_ text: S) -> Int? {
        let utf8 = text.utf8
        guard (1...12).contains(utf8.count),
              utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        if utf8.count > 1 && utf8.first == UInt8(ascii: "0") { return nil }
        return Int(text)
    }

    /// A decimal in `range` for `key`, or the config language's one error for a bad number.
    static func count(_ text: String, in range: ClosedRange<Int>, for key: String,
                      at location: SourceLocation) throws(ConfigError) -> Int {
        guard let value = decimal(text), range.contains(value) else {
            throw ConfigError(location: location, message: "bad number '\(text)' for '\(key)' (expected \(range.lowerBound)-\(range.upperBound))")
        }
        return value
    }

    /// A port in `minimum...65535`.
    static func port<S: StringProtocol>(_ text: S, minimum: Int = 1) -> UInt16? {
        guard let value = decimal(text), (minimum...65535).contains(value) else { return nil }
        return UInt16(value)
    }

    /// `443`, `8080-8089`, `*`.
    static func ports<S: StringProtocol>(_ text: S) -> Result<PortRange, ConfigValueError> {
        let expected = "expected 443, 8080-8089 or *, ports 1-65535"
        if text == "*" { return .success(.all) }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        switch parts.count {
        case 1:
            guard let port = port(parts[0]) else { return .failure("bad port '\(text)' (\(expected))") }
            return .success(PortRange(port))
        case 2:
            guard let lo = port(parts[0]), let hi = port(parts[1]) else {
                return .failure("bad port range '\(text)' (\(expected))")
            }
            guard let range = PortRange(lo: lo, hi: hi) else {
                return .failure("bad port range '\(text)' (low port above high port)")
            }
            return .success(range)
        default:
            return .failure("bad port range '\(text)' (\(expected))")
        }
    }

    /// `32768`, `32k`, `32K`, `32KiB`, `1m`, `1M`, `1MiB` (binary multiples throughout:
    /// head sizes are buffer sizes).
    static func size<S: StringProtocol>(_ text: S) -> Int? {
        let (digits, unit) = splitNumber(text)
        guard let value = decimal(digits) else { return nil }
        let multiplier: Int
        switch unit {
        case "": multiplier = 1
        case "k", "K", "KiB": multiplier = 1024
        case "m", "M", "MiB": multiplier = 1024 * 1024
        default: return nil
        }
        let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : product
    }

    /// `10` (seconds), `10s`, `500ms`, `5m`, `1h`.
    static func duration<S: StringProtocol>(_ text: S) -> Duration? {
        let (digits, unit) = splitNumber(text)
        guard let value = decimal(digits) else { return nil }
        let milliseconds: Int
        switch unit {
        case "", "s": milliseconds = 1000
        case "ms": milliseconds = 1
        case "m": milliseconds = 60_000
        case "h": milliseconds = 3_600_000
        default: return nil
        }
        let (product, overflow) = value.multipliedReportingOverflow(by: milliseconds)
        return overflow ? nil : .milliseconds(product)
    }

    /// A token split at its first `:` outside brackets: `[v6/64]:443` → (`v6/64`, true, `443`).
    struct HostPort {
        var host: Substring
        var bracketed: Bool
        var port: Substring?
    }

    /// Splits HOST[:PORT]; nil when brackets are unbalanced, something follows `]` other
    /// than `:PORT`, or an unbracketed host holds more than one colon (bare IPv6).
    static func splitHostPort(_ text: String) -> HostPort? {
        let whole = Substring(text)
        if whole.hasPrefix("[") {
            guard let close = whole.firstIndex(of: "]") else { return nil }
            let host = whole[whole.index(after: whole.startIndex)..<close]
            let rest = whole[whole.index(after: close)...]
            if host.contains("[") { return nil }
            if rest.isEmpty { return HostPort(host: host, bracketed: true, port: nil) }
            guard rest.hasPrefix(":") else { return nil }
            return HostPort(host: host, bracketed: true, port: rest.dropFirst())
        }
        if whole.contains("]") { return nil }
        let parts = whole.split(separator: ":", omittingEmptySubsequences: false)
        switch parts.count {
        case 1: return HostPort(host: parts[0], bracketed: false, port: nil)
        case 2: return HostPort(host: parts[0], bracketed: false, port: parts[1])
        default: return nil
        }
    }

    /// HOSTPAT of a `server`/`deny` rule.
    static func hostPattern(_ host: Substring, bracketed: Bool) -> Result<HostPattern, ConfigValueError> {
        let shown = bracketed ? "[\(host)]" : String(host)
        if bracketed {
            let (addressText, prefixText) = splitPrefix(host)
            guard let address = IPv6Address(text: addressText) else {
                return .failure("bad IPv6 address '\(shown)'")
            }
            return cidr(.v6(address), prefixText, maxPrefix: 128, shown: shown)
        }
        if host == "*" { return .success(.any) }
        if host.contains("/") {
            let (addressText, prefixText) = splitPrefix(host)
            guard let address = IPv4Address(strict: addressText) else {
                return .failure("bad CIDR '\(shown)' (expected a canonical IPv4 address/prefix)")
            }
            return cidr(.v4(address), prefixText, maxPrefix: 32, shown: shown)
        }
        if host.hasPrefix("*.") {
            return .failure("bad host pattern '\(shown)' (write '\(host.dropFirst())' for a domain and its subdomains)")
        }
        if host.hasPrefix(".") {
            switch HostNormalizer.normalize(String(host.dropFirst()), bracketed: false) {
            case .success(.name(let name)): return .success(.domain(name))
            case .success: return .failure("bad host pattern '\(shown)' (a domain must be a name)")
            case .failure(let error): return .failure("bad host pattern '\(shown)' (\(error.detail))")
            }
        }
        switch HostNormalizer.normalize(String(host), bracketed: false) {
        case .success(.name(let name)): return .success(.exact(name))
        case .success(.ipv4(let address)): return .success(.address(CIDR(address: .v4(address))))
        case .success(.ipv6(let address)): return .success(.address(CIDR(address: .v6(address))))
        case .failure(let error): return .failure("bad host pattern '\(shown)' (\(error.detail))")
        }
    }

    private static func splitPrefix(_ text: Substring) -> (Substring, Substring?) {
        guard let slash = text.firstIndex(of: "/") else { return (text, nil) }
        return (text[..<slash], text[text.index(after: slash)...])
    }

    private static func cidr(_ address: IPAddress, _ prefixText: Substring?, maxPrefix: Int,
                             shown: String) -> Result<HostPattern, ConfigValueError> {
        guard let prefixText else { return .success(.address(CIDR(address: address))) }
        guard let prefix = decimal(prefixText), prefix <= maxPrefix,
              let block = CIDR(base: address, prefix: prefix) else {
            return .failure("bad CIDR '\(shown)' (prefix must be 0-\(maxPrefix))")
        }
        guard block.base == address else {
            let suggestion = maxPrefix == 32 ? "\(block.base)/\(prefix)" : "[\(block.base)/\(prefix)]"
            return .failure("bad CIDR '\(shown)' (host bits set; did you mean \(suggestion)?)")
        }
        return .success(.address(block))
    }

    private static func splitNumber<S: StringProtocol>(_ text: S) -> (Substring, Substring) {
        let whole = Substring(text)
        let end = whole.firstIndex { !($0.isASCII && $0.isNumber) } ?? whole.endIndex
        return (whole[..<end], whole[end...])
    }
}
