#if canImport(Glibc)
import Glibc
#endif
import RelayCore
import RelayIO

/// Where the user store's 32-byte sealing key comes from, and how it is read and made.
///
/// Looked for in order: an explicit key file (`user-key-file`), else the systemd
/// credential `$CREDENTIALS_DIRECTORY/dynrelay-user-key` when it exists, else
/// `<state-dir>/user-store.key`. A key file must be a regular file with no group or other
/// permission bits and hold exactly 32 raw bytes or 64 hex digits (plus one optional
/// newline). `dynrelay users` makes `<state-dir>/user-store.key` when no key exists
/// anywhere and none was named; the daemon never makes one (without a key it simply
/// cannot open sealed values). Key bytes never appear in an error or a log line.
public struct UserStoreKeySource: Sendable, Equatable {
    /// The systemd credential name looked for in `$CREDENTIALS_DIRECTORY`.
    public static let credentialName = "dynrelay-user-key"
    /// The key's file name inside the state directory.
    public static let stateFileName = "user-store.key"

    /// The key file the configuration names, if any; it must exist.
    public var explicitPath: String?
    /// `$CREDENTIALS_DIRECTORY` as it was when the source was made, if set.
    public var credentialsDirectory: String?
    /// The state directory holding the default key file.
    public var stateDir: String

    /// A source for `stateDir` and an optional explicit key file; `credentialsDirectory`
    /// defaults to the process's `$CREDENTIALS_DIRECTORY`.
    public init(explicitPath: String?, stateDir: String,
                credentialsDirectory: String? = UserStoreKeySource.environmentCredentialsDirectory()) {
        self.explicitPath = explicitPath
        self.credentialsDirectory = credentialsDirectory
        self.stateDir = stateDir
    }

    /// `$CREDENTIALS_DIRECTORY` (set by systemd's `LoadCredential=`), nil when unset or empty.
    public static func environmentCredentialsDirectory() -> String? {
        guard let value = getenv("CREDENTIALS_DIRECTORY").map({ String(cString: $0) }), !value.isEmpty else {
            return nil
        }
        return value
    }

    /// The key file `<state-dir>/user-store.key`, the one `dynrelay users` creates.
    public var statePath: String { stateDir + "/" + Self.stateFileName }

    /// The key file in use: the explicit one (whether or not it exists), else the credential
    /// if that file exists, else the state-dir one if it exists; nil when there is none.
    public func locate() -> String? {
        if let explicitPath { return explicitPath }
        if let credentialsDirectory {
            let path = credentialsDirectory + "/" + Self.credentialName
            if access(path, F_OK) == 0 { return path }
        }
        return access(statePath, F_OK) == 0 ? statePath : nil
    }

    /// The key, or nil when no key file exists and none was named. Throws when the named
    /// file is missing, or the file found is insecure or malformed.
    public func load() throws(UserStoreError) -> SecretBox? {
        guard let path = locate() else { return nil }
        return try Self.readKey(path: path)
    }

    /// The key, creating `<state-dir>/user-store.key` (0600, random) and the state
    /// directory (0700) when no key exists anywhere and none was named.
    public func loadOrCreate() throws(UserStoreError) -> SecretBox {
        if let box = try load() { return box }
        try Self.createDirectory(stateDir)
        try Self.create(path: statePath)
        // Read it back through the same checks: what is used is what a restart will find.
        return try Self.readKey(path: statePath)
    }

    /// Reads and checks the key file at `path`.
    static func readKey(path: String) throws(UserStoreError) -> SecretBox {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else {
            let err = errno
            let code = err == ENOENT ? UserStoreError.Code.keyMissing : UserStoreError.Code.keyInvalid
            throw UserStoreError(code: code, message: "key file \(path): \(String(cString: strerror(err)))")
        }
        defer { close(fd) }
        // fstat on the opened file, so the checks apply to the very file read below.
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw UserStoreError(code: UserStoreError.Code.keyInvalid, message: "key file \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw UserStoreError(code: UserStoreError.Code.keyInsecure, message: "key file \(path) is not a regular file")
        }
        let permissions = info.st_mode & 0o7777
        guard permissions & 0o077 == 0 else {
            throw UserStoreError(code: UserStoreError.Code.keyInsecure,
                                 message: "key file \(path) has mode \(octal(permissions)); it must not be open to group or others (chmod 600 \(path))")
        }
        // Longer than any accepted form: refuse without reading it all.
        var buffer = [UInt8](repeating: 0, count: 67)
        var count = 0
        while count < buffer.count {
            let n = retryingInterruptions {
                buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            }
            guard n >= 0 else {
                throw UserStoreError(code: UserStoreError.Code.keyInvalid, message: "key file \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            count += n
        }
        guard let key = parse(Array(buffer[0..<count])), let box = SecretBox(key: key) else {
            throw UserStoreError(code: UserStoreError.Code.keyInvalid,
                                 message: "key file \(path) must hold exactly 32 bytes or 64 hex digits")
        }
        return box
    }

    /// 32 raw bytes as they are, or 64 hex digits with at most one trailing `\n` or `\r\n`.
    static func parse(_ content: [UInt8]) -> [UInt8]? {
        if content.count == SecretBox.keyLength { return content }
        var text = content[...]
        if text.last == UInt8(ascii: "\n") { text = text.dropLast() }
        if text.last == UInt8(ascii: "\r"), content.last == UInt8(ascii: "\n") { text = text.dropLast() }
        guard text.count == 2 * SecretBox.keyLength, let hex = String(validating: text, as: UTF8.self) else { return nil }
        return AuthHex.decode(hex)
    }

    /// Writes a fresh random key as 64 hex digits and a newline; fails if the file exists,
    /// so two concurrent first runs cannot end up with different keys.
    static func create(path: String) throws(UserStoreError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw UserStoreError(code: UserStoreError.Code.keyInvalid, message: "cannot create key file \(path): \(String(cString: strerror(errno)))")
        }
        let text = Array((AuthHex.encode(AuthCrypto.randomBytes(count: SecretBox.keyLength)) + "\n").utf8)
        var written = 0
        var failure: Int32 = 0
        while written < text.count {
            let n = retryingInterruptions { text.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) } }
            if n <= 0 { failure = n < 0 ? errno : EIO; break }
            written += n
        }
        if failure == 0, fsync(fd) != 0 { failure = errno }
        close(fd)
        guard failure == 0 else {
            unlink(path)
            throw UserStoreError(code: UserStoreError.Code.keyInvalid, message: "cannot write key file \(path): \(String(cString: strerror(failure)))")
        }
    }

    /// The state directory, 0700 as the daemon makes it, when it is missing.
    private static func createDirectory(_ path: String) throws(UserStoreError) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw UserStoreError(code: UserStoreError.Code.open, message: "mkdir \(path): \(String(cString: strerror(errno)))")
        }
    }

    private static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
