/// Turns raw request-host text into a `Host`, refusing anything with two readings.
///
/// The proxy's check and the resolver/upstream must agree on which machine a host names.
/// Every form that C libraries, browsers, or DNS treat differently (integer and octal
/// IPv4, zone ids, percent-encoding, userinfo, raw Unicode) is refused rather than guessed.
public enum HostNormalizer {
    /// Longest DNS name without its trailing dot (RFC 1035, 255 octets on the wire).
    public static let maxNameLength = 253
    /// Longest DNS label.
    public static let maxLabelLength = 63

    /// Normalises `text`.
    ///
    /// - Parameters:
    ///   - text: the host as received, without port. IPv6 comes without its brackets;
    ///     text that still carries `[` `]` is treated as bracketed.
    ///   - bracketed: the caller found the host inside `[...]`: only IPv6 is accepted then.
    public static func normalize(_ text: String, bracketed: Bool) -> Result<Host, HostError> {
        var text = Substring(text)
        var bracketed = bracketed
        if text.hasPrefix("[") && text.hasSuffix("]") && text.count >= 2 {
            text = text.dropFirst().dropLast()
            bracketed = true
        }
        if text.isEmpty { return .failure(broken("empty host")) }
        let utf8 = text.utf8
        if utf8.contains(UInt8(ascii: "%")) {
            return .failure(ambiguous(bracketed ? "IPv6 zone id or percent-encoding in host"
                                                : "percent-encoding in host"))
        }
        if utf8.contains(UInt8(ascii: "@")) { return .failure(ambiguous("userinfo in host")) }
        if utf8.contains(where: { $0 >= 0x80 }) {
            return .failure(ambiguous("non-ASCII host (IDN must be sent as punycode xn--)"))
        }
        if bracketed {
            guard let address = IPv6Address(text: text) else {
                return .failure(broken("invalid IPv6 literal"))
            }
            return .success(.ipv6(address))
        }
        if utf8.contains(UInt8(ascii: ":")) || utf8.contains(UInt8(ascii: "[")) || utf8.contains(UInt8(ascii: "]")) {
            return .failure(broken("IPv6 literal must be in brackets"))
        }
        return normalizeName(text)
    }

    /// Names and IPv4: lowercase, one trailing dot dropped, IP-looking names must be
    /// canonical dotted quads.
    private static func normalizeName(_ text: Substring) -> Result<Host, HostError> {
        var name = text.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        if name.isEmpty { return .failure(broken("empty host")) }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        // The WHATWG "ends in a number" rule: browsers parse such hosts as IPv4 in some
        // notation, resolvers may not. Only the canonical notation has one meaning.
        if let last = labels.last, !last.isEmpty, last.hasPrefix("0x") || last.utf8.allSatisfy(isDigit) {
            guard let address = IPv4Address(strict: name) else {
                return .failure(ambiguous("'\(text)' looks like an IP address but is not a canonical dotted quad"))
            }
            return .success(.ipv4(address))
        }
        if name.utf8.count > maxNameLength {
            return .failure(broken("name longer than \(maxNameLength) characters"))
        }
        for label in labels {
            if label.isEmpty { return .failure(broken("empty label in '\(text)'")) }
            if label.utf8.count > maxLabelLength {
                return .failure(broken("label longer than \(maxLabelLength) characters"))
            }
            if label.hasPrefix("-") || label.hasSuffix("-") {
                return .failure(broken("label '\(label)' starts or ends with '-'"))
            }
            if !label.utf8.allSatisfy(isLabelByte) {
                return .failure(broken("invalid character in '\(text)'"))
            }
        }
        return .success(.name(name))
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func isLabelByte(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }

    private static func ambiguous(_ detail: String) -> HostError {
        HostError(reason: .ambiguousHost, detail: detail)
    }

    private static func broken(_ detail: String) -> HostError {
        HostError(reason: .badTarget, detail: detail)
    }
}
