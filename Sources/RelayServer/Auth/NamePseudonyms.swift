#if canImport(Glibc)
import Glibc
#endif
import RelayCore

/// Stand-ins for user names no account has, for the audit trail and the log: a password
/// typed into the user-name field is an unknown user name, and must not land anywhere in
/// clear.
///
/// `unknown:` and the first 12 bytes of HMAC-SHA-256 under a per-installation key, in hex:
/// the same typed name always gives the same pseudonym, so a reviewer still sees how many
/// unknown names were tried, from where, when, how often each, and that two rows tried the
/// same one; and can check a suspected name (`dynrelay audit pseudonym`). The name itself,
/// and its length, stay out. Without the key (kept 0600 in the state directory, like the
/// user-store key) the rows do not let anyone test guesses against them.
public final class NamePseudonyms: Sendable {
    /// The key's file name in the state directory.
    public static let fileName = "name-pseudonym.key"
    static let prefix = "unknown:"

    private let hmac: KeyedHMAC

    /// The pseudonyms of the installation whose state directory is `stateDir`. The daemon
    /// creates the key (32 random bytes, 0600) on first use (`create`); a reviewer's command
    /// only reads it, so it never leaves behind a key the daemon's user cannot read.
    public init(stateDir: String, create: Bool) throws(UserStoreError) {
        let path = stateDir + "/" + Self.fileName
        if create { try Self.createKeyIfMissing(path) }
        hmac = KeyedHMAC(key: try Self.readKey(path))
    }

    /// `unknown:` and 24 hex digits for `name`.
    public func pseudonym(_ name: String) -> String {
        let mac = hmac.mac(Array(name.utf8))
        return Self.prefix + AuthHex.encode(Array(mac.prefix(12)))
    }

    /// Writes a fresh key beside `path` and links it into place, so the key file is never
    /// seen empty or half written; a key someone else linked first is kept.
    private static func createKeyIfMissing(_ path: String) throws(UserStoreError) {
        guard access(path, F_OK) != 0 else { return }
        var template = Array((path + ".XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw UserStoreError(code: UserStoreError.Code.keyMissing, message: "cannot create a key beside \(path): \(String(cString: strerror(errno)))")
        }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { unlink(temporary) }
        let key = AuthCrypto.randomBytes(count: 32)
        let written = key.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == key.count, synced, link(temporary, path) == 0 || errno == EEXIST else {
            throw UserStoreError(code: UserStoreError.Code.keyInvalid, message: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    private static func readKey(_ path: String) throws(UserStoreError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            throw UserStoreError(code: UserStoreError.Code.keyMissing, message: "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 == 0 else {
            throw UserStoreError(code: UserStoreError.Code.keyInsecure, message: "\(path) must be a regular file with no group or other permissions")
        }
        var key = [UInt8](repeating: 0, count: 33)
        let count = key.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count == 32 else {
            throw UserStoreError(code: UserStoreError.Code.keyInvalid, message: "\(path) must hold exactly 32 bytes")
        }
        return Array(key.prefix(32))
    }
}
