/// Builds the request lines helpers read, refusing input that could break the framing.
///
/// A request must stay one line whatever a client sends: control characters (CR, LF and NUL
/// above all) are refused before anything is written, so `user\n0 admin pw` can never become
/// a second request, and the words are escaped the way Squid escapes them.
public enum HelperRequestLine {
    /// Longest user name and password accepted (Squid's own buffers are 256 bytes each).
    public static let maxUserLength = 256
    public static let maxPasswordLength = 1024
    public static let maxRealmLength = 256

    /// `user password`, both rfc1738-escaped as Squid's Basic scheme sends them
    /// (basic_ncsa_auth and the other Basic helpers unescape both words).
    public static func basic(user: String, password: String) -> Result<[UInt8], HelperInputError> {
        let user = Array(user.utf8), password = Array(password.utf8)
        guard !user.isEmpty else { return .failure(.empty) }
        guard user.count <= maxUserLength, password.count <= maxPasswordLength else { return .failure(.tooLong) }
        guard !user.contains(where: isControl), !password.contains(where: isControl) else {
            return .failure(.controlCharacter)
        }
        return .success(rfc1738Escape(user) + [UInt8(ascii: " ")] + rfc1738Escape(password))
    }

    /// `"user":"realm"`, unescaped as Squid sends it (digest_file_auth compares the raw
    /// words), so a quote or backslash, which would end the word early, is refused.
    public static func digest(user: String, realm: String) -> Result<[UInt8], HelperInputError> {
        let user = Array(user.utf8), realm = Array(realm.utf8)
        guard !user.isEmpty else { return .failure(.empty) }
        guard user.count <= maxUserLength, realm.count <= maxRealmLength else { return .failure(.tooLong) }
        for byte in user + realm {
            if isControl(byte) { return .failure(.controlCharacter) }
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return .failure(.quote) }
        }
        let quote = UInt8(ascii: "\"")
        return .success([quote] + user + Array("\":\"".utf8) + realm + [quote])
    }

    /// `YR <base64>` to start a handshake (`YR` alone when there is no token yet), or
    /// `KK <base64>` to continue one. Base64 cannot carry a space or newline.
    public static func token(_ token: [UInt8], first: Bool, maxLineLength: Int) -> Result<[UInt8], HelperInputError> {
        guard first || !token.isEmpty else { return .failure(.empty) }
        // "KK " plus base64 (4 per 3 bytes) must fit the helper's line.
        guard (token.count + 2) / 3 * 4 + 3 <= maxLineLength else { return .failure(.tooLong) }
        let verb = Array((first ? "YR" : "KK").utf8)
        if token.isEmpty { return .success(verb) }
        return .success(verb + [UInt8(ascii: " ")] + Array(AuthCrypto.base64Encode(token).utf8))
    }

    private static func isControl(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x7f }

    /// Squid's rfc1738_escape: control bytes, non-ASCII and the RFC 1738 unsafe characters
    /// become `%XX`; everything else passes as is.
    static func rfc1738Escape(_ bytes: [UInt8]) -> [UInt8] {
        let unsafe = Set(" \"#%<>{}|\\^~[]`'".utf8)
        let hex = Array("0123456789ABCDEF".utf8)
        var escaped: [UInt8] = []
        escaped.reserveCapacity(bytes.count)
        for byte in bytes {
            if byte <= 0x1f || byte >= 0x7f || unsafe.contains(byte) {
                escaped += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            } else {
                escaped.append(byte)
            }
        }
        return escaped
    }
}
