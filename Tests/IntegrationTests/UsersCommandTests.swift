import Foundation
import Glibc
import RelayCore
import Testing

extension IntegrationSuite {
    /// `dynrelay users` as an operator runs it: exit codes, messages, and what lands on disk.
    @Suite("users command")
    struct UsersCommandTests {
        /// A config whose state dir does not exist yet, as on a fresh host.
        static func setUp() throws -> (dir: TempDirectory, config: String, state: String) {
            let dir = try TempDirectory()
            let state = dir.path + "/state"
            let config = try dir.write("dynrelay.conf", "listen 127.0.0.1:0\nstate-dir \(state)\n")
            return (dir, config, state)
        }

        static func users(_ arguments: [String], config: String, stdin: String? = nil) throws -> ProcessResult {
            try Subprocess.run(RelayBinary.path, ["users"] + arguments + ["--config", config],
                               input: stdin.map { .bytes(Array($0.utf8)) } ?? .none, timeout: 30)
        }

        static func mode(_ path: String) -> mode_t {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
        }

        static func expectOneLineFailure(_ result: ProcessResult, status: Int32, mentioning text: String,
                                         sourceLocation: Testing.SourceLocation = #_sourceLocation) {
            #expect(result.status == status, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
            #expect(result.stderr.hasPrefix("dynrelay: users: ") && result.stderr.split(separator: "\n").count == 1,
                    "stderr: \(result.stderr)", sourceLocation: sourceLocation)
            #expect(result.stderr.contains(text), "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        }

        @Test("add, list, passwd, del with their exit codes")
        func lifecycle() throws {
            let (dir, config, state) = try Self.setUp()
            _ = dir
            let added = try Self.users(["add", "alice", "--password-stdin"], config: config, stdin: "s3cret-pw\n")
            #expect(added.status == 0, "stderr: \(added.stderr)")
            #expect(added.stdoutText == "users: added alice\n")
            #expect(Self.mode(state) == 0o700)
            #expect(Self.mode(state + "/users.db") == 0o600)
            #expect(Self.mode(state + "/user-store.key") == 0o600)

            let db = AuditDB(path: state + "/users.db")
            let verifier = try #require(try db.query("SELECT verifier FROM users WHERE name = 'alice'").first?["verifier"])
            let parsed = try #require(PasswordVerifier(encoded: verifier))
            #expect(parsed.iterations == PasswordVerifier.defaultIterations)
            #expect(parsed.verify("s3cret-pw"), "the trailing newline is not part of the password")
            #expect(try db.query("PRAGMA journal_mode").first?["journal_mode"] == "delete")
            let file = try Data(contentsOf: URL(fileURLWithPath: state + "/users.db"))
            #expect(file.range(of: Data("s3cret-pw".utf8)) == nil)

            Self.expectOneLineFailure(try Self.users(["add", "ALICE", "--password-stdin"], config: config, stdin: "x\n"),
                                      status: 1, mentioning: "already exists")

            let listed = try Self.users(["list"], config: config)
            #expect(listed.status == 0, "stderr: \(listed.stderr)")
            let fields = listed.stdoutText.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
            #expect(fields.count == 1 && fields[0].count == 4 && fields[0][0] == "alice" && fields[0][1] == "dynrelay",
                    "stdout: \(listed.stdoutText)")

            let changed = try Self.users(["passwd", "alice", "--password-stdin"], config: config, stdin: "n3w-pw\r\n")
            #expect(changed.status == 0, "stderr: \(changed.stderr)")
            let newVerifier = try #require(try db.query("SELECT verifier FROM users WHERE name = 'alice'").first?["verifier"])
            #expect(PasswordVerifier(encoded: newVerifier)?.verify("n3w-pw") == true, "\\r\\n stripped as a whole")
            Self.expectOneLineFailure(try Self.users(["passwd", "carol", "--password-stdin"], config: config, stdin: "x\n"),
                                      status: 1, mentioning: "no user 'carol'")

            let deleted = try Self.users(["del", "alice"], config: config)
            #expect(deleted.status == 0, "stderr: \(deleted.stderr)")
            Self.expectOneLineFailure(try Self.users(["del", "alice"], config: config), status: 1, mentioning: "no user 'alice'")
            let empty = try Self.users(["list"], config: config)
            #expect(empty.status == 0 && empty.stdoutText.isEmpty, "stdout: \(empty.stdoutText) stderr: \(empty.stderr)")
        }

        @Test("no terminal and no --password-stdin: usage error, nothing created")
        func refusesWithoutPasswordSource() throws {
            let (dir, config, state) = try Self.setUp()
            _ = dir
            let result = try Self.users(["add", "bob"], config: config)
            Self.expectOneLineFailure(result, status: 64, mentioning: "--password-stdin")
            #expect(!FileManager.default.fileExists(atPath: state + "/users.db"))
            #expect(!FileManager.default.fileExists(atPath: state + "/user-store.key"))
        }

        @Test("bad names, passwords and usage")
        func refusals() throws {
            let (dir, config, _) = try Self.setUp()
            _ = dir
            Self.expectOneLineFailure(try Self.users(["add", "a:b", "--password-stdin"], config: config, stdin: "pw\n"),
                                      status: 1, mentioning: "':'")
            Self.expectOneLineFailure(try Self.users(["add", "bob", "--password-stdin"], config: config, stdin: "\n"),
                                      status: 1, mentioning: "password is empty")
            for arguments in [["add"], ["add", "a", "b"], ["frob", "x"], ["list", "x"], ["del", "x", "--password-stdin"],
                              ["add", "x", "--bogus"]] {
                let result = try Self.users(arguments, config: config)
                #expect(result.status == 64, "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains("usage: dynrelay"), "\(arguments): \(result.stderr)")
            }
        }

        @Test("a state directory another user owns is refused before anything is written, with what to run instead")
        func foreignStateDirectory() throws {
            let dir = try TempDirectory()
            // Root can hand a directory to someone else; anyone else finds one root owns.
            var state = "/"
            if geteuid() == 0 {
                state = dir.path + "/state"
                try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
                #expect(chown(state, 65534, 65534) == 0)
            }
            let config = try dir.write("dynrelay.conf", "listen 127.0.0.1:0\nstate-dir \(state)\n")
            let result = try Self.users(["add", "alice", "--password-stdin"], config: config, stdin: "pw\n")
            Self.expectOneLineFailure(result, status: 1, mentioning: "belongs to uid ")
            #expect(result.stderr.contains("service's user") && result.stderr.contains("systemd-run"), "stderr: \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: state + "/users.db"))
            #expect(!FileManager.default.fileExists(atPath: state + "/user-store.key"))
            let listed = try Self.users(["list"], config: config)
            #expect(listed.status == 0 && listed.stdoutText.isEmpty, "reading needs no ownership: \(listed.stderr)")
        }

        @Test("a key file open to others is refused with its path and mode")
        func insecureKey() throws {
            let (dir, config, state) = try Self.setUp()
            _ = dir
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            let keyPath = state + "/user-store.key"
            try String(repeating: "ab", count: 32).write(toFile: keyPath, atomically: false, encoding: .utf8)
            #expect(chmod(keyPath, 0o644) == 0)
            let result = try Self.users(["add", "alice", "--password-stdin"], config: config, stdin: "pw\n")
            Self.expectOneLineFailure(result, status: 1, mentioning: "\(keyPath) has mode 0644")
            #expect(!FileManager.default.fileExists(atPath: state + "/users.db"))
        }
    }
}
