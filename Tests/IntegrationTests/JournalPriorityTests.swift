import Foundation
import Glibc
import Testing

extension IntegrationSuite {
    /// The real binary's stderr as journald reads it: `<N>` priorities only when stderr is
    /// the stream `JOURNAL_STREAM` names.
    @Suite("journal priorities")
    struct JournalPriorityTests {
        /// Starts `dynrelay arguments` with stderr on a file that `JOURNAL_STREAM` names, as
        /// systemd names its journal socket; returns the process and the file's path.
        static func startWithJournalStderr(_ arguments: [String], in dir: TempDirectory) throws -> (Process, String) {
            let path = try dir.write("stderr", "")
            let handle = try #require(FileHandle(forWritingAtPath: path))
            var info = stat()
            try #require(fstat(handle.fileDescriptor, &info) == 0)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: RelayBinary.path)
            process.arguments = arguments
            process.environment = ProcessInfo.processInfo.environment.merging(
                ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)", "DYNRELAY_LOG": "notice"]) { _, new in new }
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = handle
            try process.run()
            try handle.close()
            return (process, path)
        }

        static func waitForExit(_ process: Process, seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            return !process.isRunning
        }

        @Test("serve: the ready line is info, lifecycle lines notice, every line prefixed")
        func serveLinesCarryPriorities() throws {
            let dir = try TempDirectory()
            let config = try dir.write("dynrelay.conf", "listen 127.0.0.1:0\nstate-dir \(dir.path)/state\n")
            let (process, path) = try Self.startWithJournalStderr(["serve", "--config", config], in: dir)
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
            let deadline = Date().addingTimeInterval(RelayProcess.readyTimeout)
            var text = ""
            while Date() < deadline && process.isRunning {
                text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
                if text.contains("ready listeners=") { break }
                usleep(20_000)
            }
            try #require(text.contains("<6>dynrelay: ready listeners=127.0.0.1:"), "stderr: \(text)")
            kill(process.processIdentifier, SIGTERM)
            try #require(Self.waitForExit(process, seconds: 20), "SIGTERM must stop the relay")
            #expect(process.terminationStatus == 0)
            text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.contains("<5>dynrelay: draining connections=0\n"), "stderr: \(text)")
            #expect(text.contains("<5>dynrelay: stopped\n"), "stderr: \(text)")
            for line in text.split(separator: "\n") {
                #expect(line.hasPrefix("<") && line.dropFirst(2).hasPrefix(">"), "unprefixed line: \(line)")
            }
        }

        @Test("check-config: a bad config's error is priority 3 in the journal")
        func checkConfigErrorIsAnError() throws {
            let dir = try TempDirectory()
            let config = try dir.write("dynrelay.conf", "listen 127.0.0.1:0\n  frobnicate yes\n")
            let (process, path) = try Self.startWithJournalStderr(["check-config", "--config", config], in: dir)
            try #require(Self.waitForExit(process, seconds: 30))
            #expect(process.terminationStatus == 1)
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text == "<3>\(config):2:3: unknown directive 'frobnicate'\n", "stderr: \(text)")
        }

        @Test("JOURNAL_STREAM naming another stream: plain lines, as on a terminal")
        func inheritedVariableAloneAddsNoPrefix() throws {
            let dir = try TempDirectory()
            let config = try dir.write("dynrelay.conf", "listen 127.0.0.1:0\n  frobnicate yes\n")
            let result = try Subprocess.run(RelayBinary.path, ["check-config", "--config", config],
                                            environment: ["JOURNAL_STREAM": "1:1"], timeout: 30)
            #expect(result.status == 1)
            #expect(result.stderr == "\(config):2:3: unknown directive 'frobnicate'\n", "stderr: \(result.stderr)")
        }
    }
}
