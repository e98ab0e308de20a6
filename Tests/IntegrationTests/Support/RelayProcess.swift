import Foundation
import Glibc
import Synchronization

/// A private temporary directory, removed when the value goes away.
final class TempDirectory: @unchecked Sendable {
    let path: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/dynrelay-it-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw HarnessError("mkdtemp: \(String(cString: strerror(errno)))")
        }
        path = String(cString: made)
    }

    /// Writes `text` to `name` inside the directory and returns the full path.
    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let full = path + "/" + name
        let parent = (full as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        try text.write(toFile: full, atomically: false, encoding: .utf8)
        return full
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// The `dynrelay` binary under test.
enum RelayBinary {
    /// `$DYNRELAY_BIN`, else the `dynrelay` next to the running test bundle (SwiftPM puts
    /// both in the same build directory, and the test target depends on the executable so
    /// `swift test` always builds it).
    static var path: String {
        if let override = ProcessInfo.processInfo.environment["DYNRELAY_BIN"], !override.isEmpty {
            return override
        }
        var candidates: [String] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append((exe as NSString).deletingLastPathComponent)
        }
        if let first = CommandLine.arguments.first {
            candidates.append(((first as NSString).standardizingPath as NSString).deletingLastPathComponent)
        }
        for directory in candidates {
            let path = directory + "/dynrelay"
            if access(path, X_OK) == 0 { return path }
        }
        return (candidates.first ?? ".") + "/dynrelay"
    }

    /// Runs `dynrelay args...` to completion (bounded).
    static func run(_ arguments: [String], input: Subprocess.Input = .none, timeout: Double = 30) throws -> ProcessResult {
        try Subprocess.run(path, arguments, input: input, timeout: timeout)
    }
}

/// One listener the ready line announced.
struct AnnouncedListener: Sendable, Equatable {
    var address: String
    var port: UInt16
    var isForward: Bool
    /// An HTTPS proxy listener (`tls:` on the ready line).
    var isTLS = false
}

/// A running `dynrelay serve` on ephemeral loopback ports, with its config and state in a
/// private temp directory.
///
/// The config text may use `{STATE}` (the state directory) and `{DIR}` (the temp dir).
/// Start waits, bounded, for `dynrelay: ready listeners=...` and parses the real ports.
/// `stop()` (also run on deinit) sends SIGTERM, then SIGKILL after 5 s.
final class RelayProcess: @unchecked Sendable {
    static let readyMarker = "dynrelay: ready listeners="
    static let readyTimeout: Double = 20

    let directory: TempDirectory
    let configPath: String
    let configText: String
    let stateDir: String
    let process = Process()
    private let stderrCollector: PipeCollector
    private(set) var listeners: [AnnouncedListener] = []

    var pid: Int32 { process.processIdentifier }
    var proxyPort: UInt16 { listeners.first { !$0.isForward && !$0.isTLS }?.port ?? 0 }
    var tlsPorts: [UInt16] { listeners.filter(\.isTLS).map(\.port) }
    var forwardPorts: [UInt16] { listeners.filter(\.isForward).map(\.port) }
    var auditPath: String { stateDir + "/audit.db" }
    var audit: AuditDB { AuditDB(path: auditPath) }
    var stderr: String { stderrCollector.text }

    /// Writes the config (plus `files`, relative to the temp dir), runs `prepare` with the
    /// config path (to add users, say), and starts the relay.
    init(config: String, files: [String: String] = [:], environment: [String: String] = [:],
         prepare: (String) throws -> Void = { _ in }) throws {
        directory = try TempDirectory()
        stateDir = directory.path + "/state"
        for (name, text) in files {
            try directory.write(name, text.replacingOccurrences(of: "{DIR}", with: directory.path))
        }
        configText = config
            .replacingOccurrences(of: "{STATE}", with: stateDir)
            .replacingOccurrences(of: "{DIR}", with: directory.path)
        configPath = try directory.write("dynrelay.conf", configText)
        try prepare(configPath)

        let binary = RelayBinary.path
        guard access(binary, X_OK) == 0 else {
            throw HarnessError("dynrelay binary not found at \(binary) (set DYNRELAY_BIN)")
        }
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--config", configPath]
        var env = ProcessInfo.processInfo.environment
        env["DYNRELAY_LOG"] = env["DYNRELAY_LOG"] ?? "info"
        env.removeValue(forKey: "NOTIFY_SOCKET")
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        stderrCollector = PipeCollector(err, limit: 16 * 1024 * 1024)
        try process.run()
        do {
            listeners = try waitForReady()
        } catch {
            stop()
            throw error
        }
    }

    deinit {
        stop()
    }

    private func waitForReady() throws -> [AnnouncedListener] {
        let deadline = Date().addingTimeInterval(Self.readyTimeout)
        while Date() < deadline {
            let text = stderr
            if let range = text.range(of: Self.readyMarker),
               let end = text[range.upperBound...].firstIndex(of: "\n") {
                let list = String(text[range.upperBound..<end])
                return try Self.parseListeners(list)
            }
            if !process.isRunning {
                throw HarnessError("binary did not print ready: dynrelay exited with status \(process.terminationStatus) before '\(Self.readyMarker)'; stderr:\n\(stderr)")
            }
            usleep(20_000)
        }
        throw HarnessError("binary did not print ready within \(Int(Self.readyTimeout)) s; stderr:\n\(stderr)")
    }

    /// `127.0.0.1:41234,forward:127.0.0.1:41235,[::1]:41236` → listeners. Entries may carry
    /// a `kind:` prefix; forwards are the ones labelled `forward`.
    static func parseListeners(_ list: String) throws -> [AnnouncedListener] {
        var result: [AnnouncedListener] = []
        for raw in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !raw.isEmpty {
            var entry = raw
            var isForward = false
            var isTLS = false
            if let bracket = entry.firstIndex(where: { $0 == "[" || $0.isNumber }), bracket != entry.startIndex {
                isForward = entry[..<bracket].lowercased().contains("forward")
                isTLS = entry[..<bracket].lowercased().hasPrefix("tls")
                entry = String(entry[bracket...])
            }
            guard let colon = entry.lastIndex(of: ":"), let port = UInt16(entry[entry.index(after: colon)...]), port != 0 else {
                throw HarnessError("cannot parse listener '\(raw)' in ready line '\(list)'")
            }
            result.append(AnnouncedListener(address: String(entry[..<colon]), port: port, isForward: isForward, isTLS: isTLS))
        }
        guard !result.isEmpty else { throw HarnessError("ready line lists no listeners: '\(list)'") }
        return result
    }

    /// `file:line` of the first config line containing `fragment`: the `rule` the relay
    /// must name in decisions and audit rows.
    func rule(containing fragment: String) -> String {
        let lines = configText.components(separatedBy: "\n")
        let index = lines.firstIndex { $0.contains(fragment) } ?? -1
        return "\(configPath):\(index + 1)"
    }

    var isAlive: Bool { process.isRunning && kill(pid, 0) == 0 }

    /// Resident set size from /proc/<pid>/status, in KiB (nil once gone).
    func residentKiB() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    /// SIGTERM, then SIGKILL after 5 s; returns the exit status (idempotent).
    @discardableResult
    func stop() -> Int32 {
        guard process.processIdentifier > 0 else { return -1 }
        if process.isRunning {
            kill(pid, SIGTERM)
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning { kill(pid, SIGKILL) }
        }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
