/// What a user store keeps to check a Basic password: PBKDF2-HMAC-SHA256 (RFC 8018) of
/// the password's UTF-8 bytes under a random salt, stored as
/// `pbkdf2-sha256$<iterations>$<base64 salt>$<base64 hash>`.
///
/// Unlike an HA1 or NT hash it is not password-equivalent: it only lets an attacker guess
/// offline, at the cost of `iterations` HMACs per guess. The default follows OWASP's 2023
/// advice for PBKDF2-HMAC-SHA256; the count is stored per verifier so it can be raised
/// later without invalidating existing passwords.
public struct PasswordVerifier: Sendable, Hashable, CustomStringConvertible {
    /// Iterations for new verifiers.
    public static let defaultIterations = 210_000
    /// Iteration counts a stored verifier may name. The floor refuses verifiers weakened by
    /// editing the database; the ceiling bounds the work one login attempt can cost.
    public static let iterationRange = 1_000...10_000_000
    /// The scheme tag that starts every encoded verifier.
    public static let scheme = "pbkdf2-sha256"

    static let saltLength = 16
    static let saltLengthRange = 8...64
    static let hashLength = 32

    /// PBKDF2 iterations this verifier was made with.
    public let iterations: Int
    private let salt: [UInt8]
    private let hash: [UInt8]

    /// A verifier for `password` under a fresh random salt. `iterations` must lie in
    /// `iterationRange`.
    public init(password: String, iterations: Int = PasswordVerifier.defaultIterations) {
        self.init(password: password, salt: AuthCrypto.randomBytes(count: Self.saltLength), iterations: iterations)
    }

    /// A verifier with a chosen salt, for known-answer tests.
    init(password: String, salt: [UInt8], iterations: Int) {
        precondition(Self.iterationRange.contains(iterations), "PBKDF2 iterations out of range")
        precondition(Self.saltLengthRange.contains(salt.count), "PBKDF2 salt length out of range")
        self.iterations = iterations
        self.salt = salt
        hash = AuthCrypto.pbkdf2SHA256(password: Array(password.utf8), salt: salt,
                                       iterations: iterations, length: Self.hashLength)
    }

    /// Parses an encoded verifier strictly: the exact scheme tag, four `$`-separated
    /// fields, iterations in plain decimal (no sign, no leading zero) within
    /// `iterationRange`, canonical padded base64 for a salt of 8...64 bytes and a 32-byte
    /// hash. Nil for anything else, since a verifier the store cannot read must never
    /// match a password.
    public init?(encoded: String) {
        let fields = encoded.utf8.split(separator: UInt8(ascii: "$"), omittingEmptySubsequences: false)
        guard fields.count == 4, Array(fields[0]) == Array(Self.scheme.utf8) else { return nil }
        let digits = fields[1]
        guard (1...8).contains(digits.count), digits.first != UInt8(ascii: "0"),
              digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              let iterations = Int(String(decoding: digits, as: UTF8.self)),
              Self.iterationRange.contains(iterations),
              let salt = try? AuthCrypto.base64Decode(utf8: Array(fields[2]), maxDecodedCount: Self.saltLengthRange.upperBound),
              Self.saltLengthRange.contains(salt.count),
              let hash = try? AuthCrypto.base64Decode(utf8: Array(fields[3]), maxDecodedCount: Self.hashLength),
              hash.count == Self.hashLength
        else { return nil }
        self.iterations = iterations
        self.salt = salt
        self.hash = hash
    }

    /// The stored form, `pbkdf2-sha256$<iterations>$<base64 salt>$<base64 hash>`.
    public var encoded: String {
        "\(Self.scheme)$\(iterations)$\(AuthCrypto.base64Encode(salt))$\(AuthCrypto.base64Encode(hash))"
    }

    /// True when `password` is the one this verifier was made from. The comparison is
    /// constant-time; the work is the PBKDF2 itself, the same for every wrong password.
    public func verify(_ password: String) -> Bool {
        let candidate = AuthCrypto.pbkdf2SHA256(password: Array(password.utf8), salt: salt,
                                                iterations: iterations, length: Self.hashLength)
        return AuthCrypto.constantTimeEquals(candidate, hash)
    }

    /// Scheme and cost only: even a verifier should not end up in logs wholesale.
    public var description: String { "\(Self.scheme) (\(iterations) iterations)" }
}
