import Foundation
import RelayCore
import RelayServer
import Testing

/// Where the key is found, which files are refused, and how `dynrelay users` makes one.
@Suite struct UserStoreKeyTests {
    static let hexKey = String(repeating: "0123456789abcdef", count: 4)

    /// Seals with `box` and opens with a box read from `expectedBytes`: the same key.
    static func isKey(_ box: SecretBox?, _ expectedBytes: [UInt8]) -> Bool {
        guard let box, let reference = SecretBox(key: expectedBytes) else { return false }
        return reference.open(box.seal([1, 2, 3], associatedData: []), associatedData: []) == [1, 2, 3]
    }

    @Test func resolutionOrderIsExplicitThenCredentialThenStateDir() throws {
        let dir = try TempDir()
        let stateDir = dir.path("state")
        let credentials = dir.path("credentials")
        try FileManager.default.createDirectory(atPath: stateDir, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        let explicitKey = [UInt8](repeating: 1, count: 32)
        let credentialKey = [UInt8](repeating: 2, count: 32)
        let stateKey = [UInt8](repeating: 3, count: 32)
        try UserFixtures.writeFile(dir.path("explicit.key"), explicitKey, mode: 0o600)
        try UserFixtures.writeFile(stateDir + "/user-store.key", stateKey, mode: 0o600)

        var source = UserStoreKeySource(explicitPath: nil, stateDir: stateDir, credentialsDirectory: credentials)
        #expect(source.locate() == stateDir + "/user-store.key", "credential set but absent: state dir")
        #expect(Self.isKey(try source.load(), stateKey))

        try UserFixtures.writeFile(credentials + "/dynrelay-user-key", credentialKey, mode: 0o400)
        #expect(source.locate() == credentials + "/dynrelay-user-key")
        #expect(Self.isKey(try source.load(), credentialKey))

        source.explicitPath = dir.path("explicit.key")
        #expect(Self.isKey(try source.load(), explicitKey))

        source.explicitPath = dir.path("missing.key")
        do {
            _ = try source.loadOrCreate()
            Issue.record("a named key file that is missing must be an error")
        } catch {
            #expect(error.code == UserStoreError.Code.keyMissing)
            #expect(error.message.contains(dir.path("missing.key")))
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path("missing.key")), "never created")
    }

    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o606, 0o610, 0o601])
    func keyFilesOpenToOthersAreRefused(_ mode: Int) throws {
        let dir = try TempDir()
        let path = dir.path("user-store.key")
        try UserFixtures.writeFile(path, Array(Self.hexKey.utf8), mode: mode_t(mode))
        let source = UserStoreKeySource(explicitPath: nil, stateDir: dir.url.path, credentialsDirectory: nil)
        do {
            _ = try source.load()
            Issue.record("mode \(String(mode, radix: 8)) accepted")
        } catch {
            #expect(error.code == UserStoreError.Code.keyInsecure)
            #expect(error.message.contains(path) && error.message.contains("0" + String(mode, radix: 8)), "\(error)")
        }
        // `users add` must not paper over it by making another key either.
        #expect(throws: UserStoreError.self) { try source.loadOrCreate() }
    }

    @Test func aDirectoryIsNotAKeyFile() throws {
        let dir = try TempDir()
        try FileManager.default.createDirectory(atPath: dir.path("k"), withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        let source = UserStoreKeySource(explicitPath: dir.path("k"), stateDir: dir.url.path, credentialsDirectory: nil)
        #expect(throws: UserStoreError.self) { try source.load() }
    }

    @Test func acceptedAndRefusedContents() throws {
        let raw = [UInt8](repeating: 0x0a, count: 32)  // every byte a newline: still raw
        let accepted: [[UInt8]] = [
            raw, Array(Self.hexKey.utf8), Array((Self.hexKey + "\n").utf8), Array((Self.hexKey + "\r\n").utf8),
            Array(Self.hexKey.uppercased().utf8),
        ]
        let refused: [[UInt8]] = [
            [], [UInt8](repeating: 1, count: 31), [UInt8](repeating: 1, count: 33), Array(Self.hexKey.dropLast().utf8),
            Array((Self.hexKey + "\n\n").utf8), Array((Self.hexKey + "\r").utf8), Array((Self.hexKey + "0").utf8),
            Array((" " + Self.hexKey).utf8), Array(String(repeating: "g", count: 64).utf8),
            [UInt8](repeating: 0x41, count: 4096),
        ]
        let dir = try TempDir()
        let path = dir.path("key")
        let source = UserStoreKeySource(explicitPath: path, stateDir: dir.url.path, credentialsDirectory: nil)
        for content in accepted {
            try? FileManager.default.removeItem(atPath: path)
            try UserFixtures.writeFile(path, content, mode: 0o600)
            #expect(try source.load() != nil, "\(content)")
        }
        #expect(Self.isKey(try source.load(), Array(UserFixtures.hexBytes(Self.hexKey))))
        for content in refused {
            try? FileManager.default.removeItem(atPath: path)
            try UserFixtures.writeFile(path, content, mode: 0o600)
            do {
                _ = try source.load()
                Issue.record("accepted \(content.count) bytes")
            } catch {
                #expect(error.code == UserStoreError.Code.keyInvalid)
                #expect(!error.message.contains("0123456789abcdef"), "no key material in errors")
            }
        }
    }

    @Test func loadOrCreateMakesOnePrivateKeyInTheStateDir() throws {
        let dir = try TempDir()
        let stateDir = dir.path("state")
        let source = UserStoreKeySource(explicitPath: nil, stateDir: stateDir, credentialsDirectory: dir.path("no-such-dir"))
        #expect(try source.load() == nil, "no key anywhere: nil, and nothing made")
        #expect(!FileManager.default.fileExists(atPath: stateDir))
        let made = try source.loadOrCreate()
        let path = stateDir + "/user-store.key"
        #expect(UserFixtures.mode(path) == 0o600)
        #expect(UserFixtures.mode(stateDir) == 0o700)
        let content = try UserFixtures.bytes(path)
        #expect(content.count == 65 && content.last == 0x0a)
        #expect(Self.isKey(made, UserFixtures.hexBytes(String(decoding: content.dropLast(), as: UTF8.self))))
        let again = try source.loadOrCreate()
        #expect(Self.isKey(again, UserFixtures.hexBytes(String(decoding: content.dropLast(), as: UTF8.self))), "reused, not remade")
    }
}

extension UserFixtures {
    static func hexBytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)!
        }
    }
}
