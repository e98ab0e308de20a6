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

    /// Decodes Digest credentials from an auth-param list, reading the list once.
    public init(parameters: AuthParameters) throws(AuthError) {
        var received = Fields()
        parameters.forEach { name, value in
            if let field = Field(name: name) { received[field] = value }
        }
        func required(_ field: Field, max: Int) throws(AuthError) -> ArraySlice<UInt8> {
            guard let value = received[field] else { throw .missingParameter(field.name) }
            guard value.count <= max else { throw .badParameter(field.name) }
            return value
        }
        func text(_ bytes: ArraySlice<UInt8>) -> String {
            // Token values are ASCII and quoted ones were checked as UTF-8 when parsed.
            bytes.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
        }

        if let token = received[.algorithm] {
            guard let algorithm = DigestAlgorithm(token: text(token)) else { throw .badParameter("algorithm") }
            self.algorithm = algorithm
        } else {
            algorithm = .md5
        }

        switch received[.userhash] {
        case nil: userhash = false
        case let flag? where AuthSyntax.equalsIgnoringCase(flag, "false"): userhash = false
        case let flag? where AuthSyntax.equalsIgnoringCase(flag, "true"): userhash = true
        default: throw .badParameter("userhash")
        }

        switch (received[.username], received[.extendedUsername]) {
        case (let plain?, nil):
            guard !plain.isEmpty, plain.count <= Bounds.username else { throw .badParameter("username") }
            if userhash {
                guard plain.count == 2 * algorithm.digestLength, AuthHex.decode(plain) != nil else {
                    throw .badParameter("username")
                }
            }
            username = text(plain)
        case (nil, let extended?):
            guard !userhash, let decoded = Self.decodeExtendedValue(text(extended)),
                  !decoded.isEmpty, decoded.utf8.count <= Bounds.username
            else { throw .badParameter("username*") }
            username = decoded
        case (nil, nil):
            throw .missingParameter("username")
        case (_?, _?):
            throw .badParameter("username*")
        }
        guard !AuthSyntax.containsControl(username) else { throw .badParameter("username") }

        realm = text(try required(.realm, max: Bounds.realm))
        nonce = text(try required(.nonce, max: Bounds.nonce))
        uri = text(try required(.uri, max: Bounds.uri))
        guard !uri.isEmpty, !AuthSyntax.containsControl(uri) else { throw .badParameter("uri") }

        let responseText = try required(.response, max: 64)
        guard responseText.count == 2 * algorithm.digestLength, let response = AuthHex.decode(responseText) else {
            throw .badParameter("response")
        }
        self.response = response

        let qopText = try required(.qop, max: 16)
        guard AuthSyntax.equalsIgnoringCase(qopText, "auth") else { throw .badParameter("qop") }
        qop = text(qopText)

        let cnonceText = try required(.cnonce, max: Bounds.cnonce)
        guard !cnonceText.isEmpty else { throw .badParameter("cnonce") }
        cnonce = text(cnonceText)

        let countDigits = try required(.nc, max: 8)
        var count: UInt32 = 0
        for digit in countDigits {
            guard countDigits.count == 8, let nibble = AuthHex.nibble(digit) else { throw .badParameter("nc") }
            count = count << 4 | UInt32(nibble)
        }
        guard count > 0 else { throw .badParameter("nc") }
        nonceCount = count
        nonceCountText = text(countDigits)

        if let opaque = received[.opaque] {
            guard opaque.count <= Bounds.nonce else { throw .badParameter("opaque") }
            self.opaque = text(opaque)
        } else {
            opaque = nil
        }
    }

    /// The parameters Digest credentials are made of; any other is ignored (RFC 7616 §3.4).
    private enum Field: Int, CaseIterable {
        case algorithm, userhash, username, extendedUsername, realm, nonce, uri, response, qop, cnonce, nc, opaque

        /// The parameter's name, lowercase, for error reports.
        var name: String { "\(staticName)" }

        /// The field a received name (any case) stands for, if any. Lengths tell most names
        /// apart before a byte is compared.
        init?(name: ArraySlice<UInt8>) {
            let candidates: [Field] = switch name.count {
            case 2: [.nc]
            case 3: [.uri, .qop]
            case 5: [.realm, .nonce]
            case 6: [.cnonce, .opaque]
            case 8: [.username, .userhash, .response]
            case 9: [.algorithm, .extendedUsername]
            default: []
            }
            guard let field = candidates.first(where: { AuthSyntax.equalsIgnoringCase(name, $0.staticName) }) else {
                return nil
            }
            self = field
        }

        private var staticName: StaticString {
            switch self {
            case .algorithm: "algorithm"
            case .userhash: "userhash"
            case .username: "username"
            case .extendedUsername: "username*"
            case .realm: "realm"
            case .nonce: "nonce"
            case .uri: "uri"
            case .response: "response"
            case .qop: "qop"
            case .cnonce: "cnonce"
            case .nc: "nc"
            case .opaque: "opaque"
            }
        }
    }

    /// The value received for each field, by the field's raw value.
    private struct Fields {
        private var values = [ArraySlice<UInt8>?](repeating: nil, count: Field.allCases.count)

        subscript(field: Field) -> ArraySlice<UInt8>? {
            get { values[field.rawValue] }
            set { values[field.rawValue] = newValue }
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
