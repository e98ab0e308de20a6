import Dispatch
import Foundation
import Glibc
import RelayCore
import RelayIO
@testable import RelayServer
import Synchronization
import Testing

/// Debian's Squid helpers, required: a missing one fails the test with the package to install.
enum SquidHelpers {
    static let directory = "/usr/lib/squid"

    static func path(_ name: String) throws -> String {
        let path = "\(directory)/\(name)"
        try #require(access(path, X_OK) == 0, "\(path) is missing: apt-get install squid (Debian's helpers)")
        return path
    }

    /// One loop for every helper test: pools hop to it, completions run on it.
    static let loop = EventLoopGroup(count: 1).loops[0]
    static let quietLog = RelayLog(level: .error)

    static func concurrentPool(_ command: ChildCommand, processes: Int, concurrency: Int, maxQueued: Int = 1024,
                               timeout: Duration = .seconds(10)) -> ConcurrentHelperPool {
        ConcurrentHelperPool(command: command,
                             configuration: HelperPoolConfiguration(processes: processes, concurrency: concurrency,
                                                                    maxQueued: maxQueued, requestTimeout: timeout),
                             loop: loop, log: quietLog)
    }

    /// `openssl passwd <flag> <password>`: the hash formats htpasswd writes.
    static func opensslPasswd(_ flag: String, _ password: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["passwd", flag, "-stdin"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data((password + "\n").utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "openssl passwd \(flag) failed")
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// Lowercase hex of MD5(`text`): the Digest HA1 for `user:realm:password`.
    static func md5(_ text: String) -> [UInt8] { AuthCrypto.md5(Array(text.utf8)) }
}

/// Collects answers delivered on another thread and waits for them.
final class Answers<T: Sendable>: Sendable {
    private let values = Mutex<[Int: T]>([:])
    private let arrived = DispatchSemaphore(value: 0)

    func callback(_ key: Int) -> @Sendable (T) -> Void {
        { value in
            let first = self.values.withLock { values in
                let isFirst = values[key] == nil
                values[key] = value
                return isFirst
            }
            if first { self.arrived.signal() }
        }
    }

    /// Waits for `count` answers in all (default 20 s: well past every request timeout).
    func wait(_ count: Int, seconds: Int = 20) throws -> [Int: T] {
        for _ in 0..<count {
            try #require(arrived.wait(timeout: .now() + .seconds(seconds)) == .success, "an answer never came")
        }
        return values.withLock { $0 }
    }

    /// Sends one request and waits for its answer.
    static func one(_ send: (@escaping @Sendable (T) -> Void) -> Void) throws -> T {
        let answers = Answers<T>()
        send(answers.callback(0))
        return try #require(try answers.wait(1)[0])
    }
}

/// True when `pid` is gone and reaped (not even a zombie is left).
func processIsGone(_ pid: pid_t) -> Bool {
    kill(pid, 0) != 0 && errno == ESRCH
}

/// Polls `condition` for up to `seconds` (the helper's restart runs on its own clock).
func eventually(seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}

/// A harness step that could not run.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A Squid-protocol helper written as a shell script in a temp directory of its own, and the
/// authenticator a config using it builds. The script logs what it hears to `requestLog`.
final class ScriptedHelperAuth {
    let directory: String
    let requestLog: String
    let shared: ProxyAuthenticator

    /// `script` gets the request log's path and returns the script; `authLines` gets the
    /// script's path and returns the config's auth lines.
    init(script: (_ requestLog: String) -> String, authLines: (_ scriptPath: String) -> String) throws {
        var template = Array("/tmp/scripted-helper-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw TestFailure("mkdtemp: errno \(errno)") }
        directory = String(cString: created)
        requestLog = directory + "/requests"
        let path = directory + "/helper.sh"
        guard FileManager.default.createFile(atPath: path, contents: Data(script(requestLog).utf8)), chmod(path, 0o700) == 0 else {
            throw TestFailure("cannot write \(path)")
        }
        let config = try ConfigParser.parse(text: "listen 127.0.0.1:0\n" + authLines(path), file: "t.conf")
        let helpers = AuthHelpers(config.auth, loop: SquidHelpers.loop, log: SquidHelpers.quietLog)
        shared = ProxyAuthenticator(config: config.auth, store: nil, digestKey: Array(repeating: 7, count: 32),
                                    helpers: helpers, negotiate: nil)
    }

    deinit {
        shared.helpers.close()
        _ = try? FileManager.default.removeItem(atPath: directory)
    }

    /// The lines the script logged, in order.
    var heard: [String] {
        ((try? String(contentsOfFile: requestLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Each `Proxy-Authorization` value on its own connection from 10.0.0.9, all at once,
    /// in the order given; the outcomes in the order they came.
    func authenticateAtOnce(_ authorizations: [String]) -> [ProxyAuthOutcome] {
        let outcomes = Mutex<[ProxyAuthOutcome]>([])
        let done = DispatchGroup()
        for (index, authorization) in authorizations.enumerated() {
            let connection = ConnectionAuthenticator.bound(shared: shared, loop: SquidHelpers.loop, clientAddress: "10.0.0.9:\(4000 + index)")
            let request = ProxyAuthRequest(authorization: authorization, method: "CONNECT", target: "app:443")
            done.enter()
            SquidHelpers.loop.execute {
                connection.value.authenticate(request) { outcome in
                    outcomes.withLock { $0.append(outcome) }
                    done.leave()
                }
            }
        }
        _ = done.wait(timeout: .now() + 20)
        return outcomes.withLock { $0 }
    }
}

/// The reason of a refusal, nil for a grant.
func refusalReason(_ outcome: ProxyAuthOutcome) -> ReasonCode? {
    if case .refused(let refusal) = outcome { return refusal.reason }
    return nil
}
