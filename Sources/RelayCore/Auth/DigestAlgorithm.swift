/// A Digest hash algorithm (RFC 7616 §3.2, §6.1). The `-sess` variants are not offered.
public enum DigestAlgorithm: String, Sendable, CaseIterable, Hashable {
    /// SHA-256: offered first.
    case sha256 = "SHA-256"
    /// MD5: for clients (and Squid helpers) that know nothing else.
    case md5 = "MD5"

    /// The algorithm a challenge or credentials token names, ignoring ASCII case.
    public init?(token: String) {
        self.init(token: Array(token.utf8)[...])
    }

    /// `init(token:)` over the token's bytes, as Digest credentials hold them.
    init?(token: ArraySlice<UInt8>) {
        if AuthSyntax.equalsIgnoringCase(token, "sha-256") {
            self = .sha256
        } else if AuthSyntax.equalsIgnoringCase(token, "md5") {
            self = .md5
        } else {
            return nil
        }
    }

    /// Length of the raw digest in bytes (16 or 32).
    public var digestLength: Int {
        switch self {
        case .sha256: 32
        case .md5: 16
        }
    }

    /// The raw digest of `bytes`.
    public func hash(_ bytes: [UInt8]) -> [UInt8] {
        switch self {
        case .sha256: AuthCrypto.sha256(bytes)
        case .md5: AuthCrypto.md5(bytes)
        }
    }

    /// The raw digest of `bytes` into the start of `output` (at least `digestLength` bytes).
    func hash(_ bytes: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        switch self {
        case .sha256: AuthCrypto.digest(AuthAlgorithms.shared.sha256, bytes, length: 32, into: output)
        case .md5: AuthCrypto.digest(AuthAlgorithms.shared.md5, bytes, length: 16, into: output)
        }
    }

    /// Lowercase hex of the digest of `text`'s UTF-8 bytes: RFC 7616's `H(data)`.
    public func hexHash(_ text: String) -> String {
        AuthHex.encode(hash(Array(text.utf8)))
    }

    /// The raw `H(user ":" realm ":" password)` a user store keeps (encrypted: it is
    /// password-equivalent) and hands back to `DigestAuthenticator`.
    public func ha1(user: String, realm: String, password: String) -> [UInt8] {
        hash(Array("\(user):\(realm):\(password)".utf8))
    }

    /// `H(user ":" realm)` in hex: the name a client sends with `userhash=true`.
    public func userhash(user: String, realm: String) -> String {
        hexHash("\(user):\(realm)")
    }
}
