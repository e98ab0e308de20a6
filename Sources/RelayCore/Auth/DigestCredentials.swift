/// The client's Digest response (RFC 7616 §3.4), parsed and bounded but not yet verified.
///
/// Only `qop=auth` is accepted (the only one offered), so `cnonce` and `nc` are required.
/// A missing `algorithm` means MD5 (RFC 7616 §3.3). `username*` (RFC 8187, UTF-8 only) is
/// decoded into `username`; it may not be combined with `username` or `userhash=true`.
public struct DigestCredentials: Sendable, Equatable {
    /// Per-field length bounds in bytes; the whole header is bounded too.
    public enum Bounds {
        /// `username` (or its userhash).
        public static let username = 256
        /// `realm`.
        public static let realm = 256
        /// `nonce`, `opaque`.
        public static let nonce = 128
        /// `cnonce`.
        public static let cnonce = 256
        /// `uri`: a request target.
        public static let uri = 8192
    }

    /// The user name, or `H(user:realm)` in hex when `userhash` is true.
    public let username: String
    /// True when `username` is a userhash.
    public let userhash: Bool
    /// The realm the client answers.
    public let realm: String
    /// The server nonce the client answers.
    public let nonce: String
    /// The request target the client hashed.
    public let uri: String
    /// The response digest, raw bytes.
    public let response: [UInt8]
    /// The algorithm the client used.
    public let algorithm: DigestAlgorithm
    /// The client nonce.
    public let cnonce: String
    /// The nonce-count as sent (8 hex digits), hashed verbatim.
    public let nonceCountText: String
    /// The nonce-count's value, at least 1.
    public let nonceCount: UInt32
    /// The quality of protection as sent (`auth`, any case), hashed verbatim.
    public let qop: String
    /// The opaque value, if returned.
    public let opaque: String?

    /// Decodes the credentials of a parsed `Digest` field value.
    public init(_ authorization: ProxyAuthorization) throws(AuthError) {
        guard authorization.hasScheme("Digest") else { throw .wrongScheme }
        guard let parameters = authorization.parameters else { throw .malformedHeader }
        try self.init(parameters: parameters)
    }

    /// Decodes Digest credentials from an auth-param list.
    public init(parameters: AuthParameters) throws(AuthError) {
        func required(_ name: StaticString, max: Int) throws(AuthError) -> String {
            guard let value = parameters.value(name) else { throw .missingParameter("\(name)") }
            guard value.utf8.count <= max else { throw .badParameter("\(name)") }
            return value
        }

        if let token = parameters.value("algorithm") {
            guard let algorithm = DigestAlgorithm(token: token) else { throw .badParameter("algorithm") }
            self.algorithm = algorithm
        } else {
            algorithm = .md5
        }

        switch parameters.value("userhash").map(AuthSyntax.asciiLowercased) {
        case nil, "false": userhash = false
        case "true": userhash = true
        default: throw .badParameter("userhash")
        }

        switch (parameters.value("username"), parameters.value("username*")) {
        case (let plain?, nil):
            guard !plain.isEmpty, plain.utf8.count <= Bounds.username else { throw .badParameter("username") }
            if userhash {
                guard plain.utf8.count == 2 * algorithm.digestLength, AuthHex.decode(plain) != nil else {
                    throw .badParameter("username")
                }
            }
            username = plain
        case (nil, let extended?):
            guard !userhash, let decoded = Self.decodeExtendedValue(extended),
                  !decoded.isEmpty, decoded.utf8.count <= Bounds.username
            else { throw .badParameter("username*") }
            username = decoded
        case (nil, nil):
            throw .missingParameter("username")
        case (_?, _?):
            throw .badParameter("username*")
        }
        guard !AuthSyntax.containsControl(username) else { throw .badParameter("username") }

        realm = try required("realm", max: Bounds.realm)
        nonce = try required("nonce", max: Bounds.nonce)
        uri = try required("uri", max: Bounds.uri)
        guard !uri.isEmpty, !AuthSyntax.containsControl(uri) else { throw .badParameter("uri") }

        guard let responseText = parameters.valueBytes("response") else { throw .missingParameter("response") }
        guard responseText.count == 2 * algorithm.digestLength, let response = AuthHex.decode(responseText) else {
            throw .badParameter("response")
        }
        self.response = response

        qop = try required("qop", max: 16)
        guard AuthSyntax.asciiCaseInsensitiveEquals(qop, "auth") else { throw .badParameter("qop") }

        cnonce = try required("cnonce", max: Bounds.cnonce)
        guard !cnonce.isEmpty else { throw .badParameter("cnonce") }

        guard let countDigits = parameters.valueBytes("nc") else { throw .missingParameter("nc") }
        var count: UInt32 = 0
        for digit in countDigits {
            guard countDigits.count == 8, let nibble = AuthHex.nibble(digit) else { throw .badParameter("nc") }
            count = count << 4 | UInt32(nibble)
        }
        guard count > 0 else { throw .badParameter("nc") }
        nonceCount = count
        nonceCountText = String(decoding: countDigits, as: UTF8.self)

        if let opaque = parameters.value("opaque") {
            guard opaque.utf8.count <= Bounds.nonce else { throw .badParameter("opaque") }
            self.opaque = opaque
        } else {
            opaque = nil
        }
    }

    /// RFC 8187 `ext-value` with the UTF-8 charset: `UTF-8'[language]'pct-encoded-value`.
    private static func decodeExtendedValue(_ text: String) -> String? {
        let parts = text.utf8.split(separator: UInt8(ascii: "'"), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, AuthSyntax.asciiLowercased(String(decoding: parts[0], as: UTF8.self)) == "utf-8",
              parts[1].allSatisfy({ AuthSyntax.isToken68Char($0) && $0 != UInt8(ascii: "/") })
        else { return nil }
        var bytes: [UInt8] = []
        var iterator = parts[2].makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(AuthHex.nibble),
                      let low = iterator.next().flatMap(AuthHex.nibble)
                else { return nil }
                bytes.append(high << 4 | low)
            } else {
                // attr-char = ALPHA / DIGIT / "!" / "#" / "$" / "&" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~"
                guard AuthSyntax.isTokenChar(byte), byte != UInt8(ascii: "*"), byte != UInt8(ascii: "'"),
                      byte != UInt8(ascii: "%")
                else { return nil }
                bytes.append(byte)
            }
        }
        return AuthSyntax.utf8String(bytes[...])
    }
}
