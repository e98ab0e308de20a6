/// Which user names and passwords the store accepts, checked before anything is hashed or
/// written.
public enum UserCredentialRules {
    /// Longest user name, in UTF-8 bytes.
    public static let maxNameBytes = 256
    /// Longest password, in UTF-8 bytes.
    public static let maxPasswordBytes = 1024

    /// Refuses a name that is empty or longer than `maxNameBytes`, holds a control
    /// character (C0, DEL, C1: they would break log lines and headers), a `:` (the Basic
    /// and Digest HA1 delimiter, so `a:b` could never log in), or U+FFFD (what an argument
    /// that was not valid UTF-8 decodes to).
    public static func validate(name: String) throws(UserStoreError) {
        let count = name.utf8.count
        guard count > 0 else { throw invalidName("the user name is empty") }
        guard count <= maxNameBytes else {
            throw invalidName("the user name is \(count) bytes; at most \(maxNameBytes) are allowed")
        }
        for scalar in name.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                throw invalidName("the user name contains a control character (U+\(hex(scalar.value)))")
            }
            if scalar == ":" {
                throw invalidName("the user name contains ':', which Basic and Digest use as a delimiter")
            }
            if scalar == "\u{FFFD}" {
                throw invalidName("the user name is not valid UTF-8 (it contains U+FFFD)")
            }
        }
    }

    /// The password in `bytes`, refused when empty, longer than `maxPasswordBytes`, not
    /// valid UTF-8 (Basic, Digest and NTLM all hash it as text) or holding a NUL (which C
    /// clients and helpers would cut it at).
    public static func password(fromBytes bytes: [UInt8]) throws(UserStoreError) -> String {
        guard !bytes.isEmpty else { throw invalidPassword("the password is empty") }
        guard bytes.count <= maxPasswordBytes else {
            throw invalidPassword("the password is \(bytes.count) bytes; at most \(maxPasswordBytes) are allowed")
        }
        guard !bytes.contains(0) else { throw invalidPassword("the password contains a NUL byte") }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw invalidPassword("the password is not valid UTF-8")
        }
        return text
    }

    /// `password(fromBytes:)` for a password already held as a string.
    public static func validate(password: String) throws(UserStoreError) {
        _ = try self.password(fromBytes: Array(password.utf8))
    }

    private static func invalidName(_ message: String) -> UserStoreError {
        UserStoreError(code: UserStoreError.Code.invalidName, message: message)
    }

    private static func invalidPassword(_ message: String) -> UserStoreError {
        UserStoreError(code: UserStoreError.Code.invalidPassword, message: message)
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
