import Foundation
import RelayCore
import RelayServer

/// Keys, stores and file access for the user store tests.
enum UserFixtures {
    static let key = SecretBox(key: [UInt8](repeating: 0x5a, count: 32))!
    static let otherKey = SecretBox(key: [UInt8](repeating: 0xa5, count: 32))!
    /// The PBKDF2 floor: the tests check behaviour, not cost.
    static let iterations = PasswordVerifier.iterationRange.lowerBound
    static let realm = "corp proxy"

    static func store(_ dir: TempDir, key: SecretBox? = UserFixtures.key) throws(UserStoreError) -> UserStore {
        try UserStore(path: dir.path("users.db"), key: key, iterations: iterations)
    }

    /// A directory that checks the file on every lookup, with the key in `dir`.
    static func directory(_ dir: TempDir, interval: Duration = .zero) -> UserDirectory {
        UserDirectory(storePath: dir.path("users.db"),
                      keySource: UserStoreKeySource(explicitPath: nil, stateDir: dir.url.path, credentialsDirectory: nil),
                      checkInterval: interval)
    }

    /// Writes `UserFixtures.key` as the state-dir key file, 0600.
    static func writeStateKey(_ dir: TempDir, hexOf box: [UInt8] = [UInt8](repeating: 0x5a, count: 32)) throws {
        let path = dir.path(UserStoreKeySource.stateFileName)
        try writeFile(path, Array(hex(box).utf8) + [0x0a], mode: 0o600)
    }

    static func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw SQL.Failure(description: "create \(path)")
        }
        guard chmod(path, mode) == 0 else { throw SQL.Failure(description: "chmod \(path)") }
    }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// True when `needle` occurs anywhere in `haystack`.
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }
}
