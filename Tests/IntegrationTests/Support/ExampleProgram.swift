import Foundation

/// The client guide's example programs (`Examples/`), built beside `dynrelay`.
enum ExampleProgram {
    /// The repository root, found from this file's place in it.
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func path(_ name: String) -> String {
        (RelayBinary.path as NSString).deletingLastPathComponent + "/" + name
    }

    /// Runs `name` with `environment` and nothing of the test's own environment but `PATH`
    /// and `HOME`, so no `http_proxy` or `DYNRELAY_*` of the machine's changes what it does.
    static func run(_ name: String, _ arguments: [String] = [], environment: [String: String] = [:]) throws -> ProcessResult {
        let own = ProcessInfo.processInfo.environment
        var clean = ["PATH": own["PATH"] ?? "/usr/bin:/bin", "HOME": own["HOME"] ?? "/tmp"]
        clean.merge(environment) { _, new in new }
        return try Subprocess.run(path(name), arguments, environment: clean, inheritEnvironment: false, timeout: 30)
    }
}
