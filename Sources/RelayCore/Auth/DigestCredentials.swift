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

    /// True when `username` is a userhash.
    public let userhash: Bool
    /// The algorithm the client used.
    public let algorithm: DigestAlgorithm
    /// The nonce-count's value, at least 1.
    public let nonceCount: UInt32

    /// Every value verification reads, unquoted and unescaped, end to end in one array (the
    /// response already decoded): one allocation per request, where a String per field cost
    /// more than checking them.
    private let storage: [UInt8]
    private let spans: Spans

    /// Where each value lies in `storage`.
    private struct Spans: Sendable {
        var username = 0..<0, realm = 0..<0, nonce = 0..<0, uri = 0..<0, response = 0..<0
        var cnonce = 0..<0, nonceCount = 0..<0, qop = 0..<0
        var opaque: Range<Int>?
    }

    /// The user name, or `H(user:realm)` in hex when `userhash` is true.
    public var username: String { text(spans.username) }
    /// The realm the client answers.
    public var realm: String { text(spans.realm) }
    /// The server nonce the client answers.
    public var nonce: String { text(spans.nonce) }
    /// The request target the client hashed.
    public var uri: String { text(spans.uri) }
    /// The response digest, raw bytes.
    public var response: [UInt8] { Array(storage[spans.response]) }
    /// The client nonce.
    public var cnonce: String { text(spans.cnonce) }
    /// The nonce-count as sent (8 hex digits), hashed verbatim.
    public var nonceCountText: String { text(spans.nonceCount) }
    /// The quality of protection as sent (`auth`, any case), hashed verbatim.
    public var qop: String { text(spans.qop) }
    /// The opaque value, if returned.
    public var opaque: String? { spans.opaque.map(text) }

    /// The values as bytes, valid inside `withBytes`.
    struct Bytes {
        let username, realm, nonce, uri, response, cnonce, nonceCount, qop: UnsafeRawBufferPointer
        let opaque: UnsafeRawBufferPointer?
    }

    /// Calls `body` with the values as bytes: what verification compares and hashes.
    func withBytes<Result>(_ body: (Bytes) -> Result) -> Result {
        storage.withUnsafeBytes { storage in
            func part(_ range: Range<Int>) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[range]) }
            return body(Bytes(username: part(spans.username), realm: part(spans.realm), nonce: part(spans.nonce),
                              uri: part(spans.uri), response: part(spans.response), cnonce: part(spans.cnonce),
                              nonceCount: part(spans.nonceCount), qop: part(spans.qop), opaque: spans.opaque.map(part)))
        }
    }

    /// Credentials compare by their values, not by how the header spelled them.
    public static func == (lhs: DigestCredentials, rhs: DigestCredentials) -> Bool {
        lhs.userhash == rhs.userhash && lhs.algorithm == rhs.algorithm && lhs.nonceCount == rhs.nonceCount
            && lhs.username == rhs.username && lhs.realm == rhs.realm && lhs.nonce == rhs.nonce && lhs.uri == rhs.uri
            && lhs.response == rhs.response && lhs.cnonce == rhs.cnonce && lhs.nonceCountText == rhs.nonceCountText
            && lhs.qop == rhs.qop && lhs.opaque == rhs.opaque
    }

    /// Decodes the credentials of a parsed `Digest` field value.
    public init(_ authorization: ProxyAuthorization) throws(AuthError) {
        guard authorization.hasScheme("Digest") else { throw .wrongScheme }
        guard let parameters = authorization.parameters else { throw .malformedHeader }
        try self.init(parameters: parameters)
    }

    /// Decodes Digest credentials from an auth-param list, reading the list once and copying
    /// each value it keeps once.
    public init(parameters: AuthParameters) throws(AuthError) {
        var received = InlineArray<12, AuthParameters.RawValue?>(repeating: nil)
        parameters.forEachRaw { name, value in
            if let field = Field(name: name) { received[field.rawValue] = value }
        }
        // Room for the values kept, and `username*` decoded (no longer than as received),
        // not for the whole header: a long parameter nobody reads costs nothing here.
        var keptBytes = received[Field.extendedUsername.rawValue]?.count ?? 0
        for index in received.indices { keptBytes += received[index]?.count ?? 0 }
        var storage: [UInt8] = []
        storage.reserveCapacity(keptBytes)
        func copy(_ field: Field) -> Range<Int>? {
            guard let value = received[field.rawValue] else { return nil }
            let start = storage.count
            parameters.appendValue(value, to: &storage)
            return start..<storage.count
        }
        func required(_ field: Field, max: Int) throws(AuthError) -> Range<Int> {
            guard let range = copy(field) else { throw .missingParameter(field.name) }
            guard range.count <= max else { throw .badParameter(field.name) }
            return range
        }
        func spells(_ range: Range<Int>, _ lowercase: StaticString) -> Bool {
            AuthSyntax.equalsIgnoringCase(storage[range], lowercase)
        }
        var spans = Spans()

        if let token = copy(.algorithm) {
            guard let algorithm = DigestAlgorithm(token: storage[token]) else { throw .badParameter("algorithm") }
            self.algorithm = algorithm
        } else {
            algorithm = .md5
        }

        switch copy(.userhash) {
        case nil: userhash = false
        case let flag? where spells(flag, "false"): userhash = false
        case let flag? where spells(flag, "true"): userhash = true
        default: throw .badParameter("userhash")
        }

        switch (copy(.username), copy(.extendedUsername)) {
        case (let plain?, nil):
            guard !plain.isEmpty, plain.count <= Bounds.username else { throw .badParameter("username") }
            if userhash {
                guard plain.count == 2 * algorithm.digestLength, storage[plain].allSatisfy({ AuthHex.nibble($0) != nil }) else {
                    throw .badParameter("username")
                }
            }
            spans.username = plain
        case (nil, let extended?):
            guard !userhash, let decoded = Self.decodeExtendedValue(String(decoding: storage[extended], as: UTF8.self)),
                  !decoded.isEmpty, decoded.utf8.count <= Bounds.username
            else { throw .badParameter("username*") }
            let start = storage.count
            storage += decoded.utf8
            spans.username = start..<storage.count
        case (nil, nil):
            throw .missingParameter("username")
        case (_?, _?):
            throw .badParameter("username*")
        }
        func hasControl(_ range: Range<Int>) -> Bool {
            storage.withUnsafeBytes { AuthSyntax.containsControl(utf8: UnsafeRawBufferPointer(rebasing: $0[range])) }
        }
        guard !hasControl(spans.username) else { throw .badParameter("username") }

        spans.realm = try required(.realm, max: Bounds.realm)
        spans.nonce = try required(.nonce, max: Bounds.nonce)
        spans.uri = try required(.uri, max: Bounds.uri)
        guard !spans.uri.isEmpty, !hasControl(spans.uri) else { throw .badParameter("uri") }

        // Decoded in place, over the first half of its own digits.
        let hex = try required(.response, max: 64)
        guard hex.count == 2 * algorithm.digestLength else { throw .badParameter("response") }
        let decoded = storage.withUnsafeMutableBytes { buffer in
            AuthHex.decode(UnsafeRawBufferPointer(rebasing: buffer[hex]), into: UnsafeMutableRawBufferPointer(rebasing: buffer[hex]))
        }
        guard decoded else { throw .badParameter("response") }
        spans.response = hex.lowerBound..<hex.lowerBound + hex.count / 2

        spans.qop = try required(.qop, max: 16)
        guard spells(spans.qop, "auth") else { throw .badParameter("qop") }

        spans.cnonce = try required(.cnonce, max: Bounds.cnonce)
        guard !spans.cnonce.isEmpty else { throw .badParameter("cnonce") }

        spans.nonceCount = try required(.nc, max: 8)
        var count: UInt32 = 0
        for digit in storage[spans.nonceCount] {
            guard spans.nonceCount.count == 8, let nibble = AuthHex.nibble(digit) else { throw .badParameter("nc") }
            count = count << 4 | UInt32(nibble)
        }
        guard count > 0 else { throw .badParameter("nc") }
        nonceCount = count

        if let opaque = copy(.opaque) {
            guard opaque.count <= Bounds.nonce else { throw .badParameter("opaque") }
            spans.opaque = opaque
        }
        self.storage = storage
        self.spans = spans
    }

    /// Token values are ASCII and quoted ones were checked as UTF-8 when parsed.
    private func text(_ range: Range<Int>) -> String {
        storage.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
    }

    /// The parameters Digest credentials are made of; any other is ignored (RFC 7616 §3.4).
    private enum Field: Int, CaseIterable {
        case algorithm, userhash, username, extendedUsername, realm, nonce, uri, response, qop, cnonce, nc, opaque

        /// The parameter's name, lowercase, for error reports.
        var name: String { "\(staticName)" }

        /// The field a received name (any case) stands for, if any.
        init?(name: UnsafeRawBufferPointer) {
            guard let first = name.first else { return nil }
            // Length and first letter pick the one candidate, so one comparison decides.
            let candidate: Field? = switch (name.count, first | 0x20) {
            case (2, UInt8(ascii: "n")): .nc
            case (3, UInt8(ascii: "u")): .uri
            case (3, UInt8(ascii: "q")): .qop
            case (5, UInt8(ascii: "r")): .realm
            case (5, UInt8(ascii: "n")): .nonce
            case (6, UInt8(ascii: "c")): .cnonce
            case (6, UInt8(ascii: "o")): .opaque
            case (8, UInt8(ascii: "r")): .response
            case (8, UInt8(ascii: "u")): name[4] | 0x20 == UInt8(ascii: "n") ? .username : .userhash
            case (9, UInt8(ascii: "a")): .algorithm
            case (9, UInt8(ascii: "u")): .extendedUsername
            default: nil
            }
            guard let candidate, AuthSyntax.equalsIgnoringCase(name, candidate.staticName) else { return nil }
            self = candidate
        }

        var staticName: StaticString {
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
                guard HTTPBytes.isTokenChar(byte), byte != UInt8(ascii: "*"), byte != UInt8(ascii: "'"),
                      byte != UInt8(ascii: "%")
                else { return nil }
                bytes.append(byte)
            }
        }
        return AuthSyntax.utf8String(bytes[...])
    }
}
