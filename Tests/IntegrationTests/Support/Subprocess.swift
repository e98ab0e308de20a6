import Foundation
import Glibc
import Synchronization

/// A test-side failure with a message that says what to look at.
struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Collects everything a child writes to one pipe, on a thread of its own, so a chatty
/// child never blocks on a full pipe while the test waits for something else.
final class PipeCollector: @unchecked Sendable {
    private let bytes = Mutex<[UInt8]>([])
    private let finished = DispatchSemaphore(value: 0)
    /// Stops keeping bytes past this many (still drains), so a runaway child cannot eat memory.
    let limit: Int

    init(_ pipe: Pipe, limit: Int = 256 * 1024 * 1024) {
        self.limit = limit
        let fd = pipe.fileHandleForReading.fileDescriptor
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                bytes.withLock { collected in
                    if collected.count < limit { collected += buffer[0..<n] }
                }
            }
            finished.signal()
        }
    }

    var data: [UInt8] { bytes.withLock { $0 } }
    var text: String { String(decoding: data, as: UTF8.self) }

    /// Waits (bounded) for the writer side to close.
    func waitForEOF(seconds: Double) -> Bool {
        finished.wait(timeout: .now() + seconds) == .success
    }
}

/// What a finished child process left behind.
struct ProcessResult: Sendable {
    var status: Int32
    var stdout: [UInt8]
    var stderr: String
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

/// Runs short-lived commands (curl, `dynrelay check-config`, sqlite3) with a deadline.
enum Subprocess {
    /// Where a child's stdin comes from.
    enum Input: Sendable {
        case none
        case bytes([UInt8])
    }

    /// Runs `executable` with `arguments`; kills it and throws after `timeout` seconds.
    /// `environment` adds to the test's own, or is the whole of it without `inheritEnvironment`.
    static func run(_ executable: String, _ arguments: [String], input: Input = .none,
                    environment: [String: String]? = nil, inheritEnvironment: Bool = true,
                    timeout: Double = 60) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment {
            process.environment = inheritEnvironment
                ? ProcessInfo.processInfo.environment.merging(environment) { _, new in new } : environment
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        var inputPipe: Pipe?
        switch input {
        case .none:
            process.standardInput = FileHandle.nullDevice
        case .bytes:
            let pipe = Pipe()
            process.standardInput = pipe
            inputPipe = pipe
        }
        let stdoutCollector = PipeCollector(out)
        let stderrCollector = PipeCollector(err)
        try process.run()
        if case .bytes(let bytes) = input, let inputPipe {
            let writer = inputPipe.fileHandleForWriting
            Thread.detachNewThread {
                let fd = writer.fileDescriptor
                bytes.withUnsafeBytes { raw in
                    var offset = 0
                    while offset < raw.count {
                        let n = Glibc.write(fd, raw.baseAddress! + offset, min(raw.count - offset, 1 << 20))
                        if n < 0 && errno == EINTR { continue }
                        if n <= 0 { break }
                        offset += n
                    }
                }
                try? writer.close()
            }
        }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline {
            usleep(10_000)
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw HarnessError("\(executable) \(arguments.joined(separator: " ")) did not finish within \(Int(timeout)) s; stderr: \(stderrCollector.text)")
        }
        process.waitUntilExit()
        _ = stdoutCollector.waitForEOF(seconds: 5)
        _ = stderrCollector.waitForEOF(seconds: 5)
        return ProcessResult(status: process.terminationStatus, stdout: stdoutCollector.data, stderr: stderrCollector.text)
    }

    /// `name` in the usual system directories, if it is installed and executable.
    static func find(_ name: String) -> String? {
        for directory in ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin"] {
            let path = directory + "/" + name
            if access(path, X_OK) == 0 { return path }
        }
        return nil
    }
}
