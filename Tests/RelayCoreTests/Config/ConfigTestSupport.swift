import Glibc
import Testing
@testable import RelayCore

/// An in-memory filesystem for includes, so parser tests need no disk.
struct MemoryFiles {
    var files: [String: String]

    init(_ files: [String: String] = [:]) {
        self.files = files
    }

    func resolve(_ pattern: String, including: String) throws -> [(path: String, text: String)] {
        let full = PathLexical.normalize(PathLexical.resolve(pattern, relativeTo: including))
        if full.contains(where: { "*?[".contains($0) }) {
            return files.keys.filter { fnmatch(full, $0, FNM_PATHNAME) == 0 }.sorted().map { ($0, files[$0] ?? "") }
        }
        guard let text = files[full] else {
            throw ConfigError(location: RelayCore.SourceLocation(file: including, line: 1, column: 1),
                              message: "cannot read '\(full)': No such file or directory")
        }
        return [(full, text)]
    }
}

/// Parses `text` as `main.conf` with `files` available to `include`.
func parseConfig(_ text: String, file: String = "main.conf", files: [String: String] = [:]) throws(ConfigError) -> RelayConfig {
    let memory = MemoryFiles(files)
    return try ConfigParser.parse(text: text, file: file, includeResolver: memory.resolve)
}

/// The error `text` produces, as `file:line:col: message`; nil when it parses.
func configError(_ text: String, file: String = "main.conf", files: [String: String] = [:]) -> String? {
    do {
        _ = try parseConfig(text, file: file, files: files)
        return nil
    } catch {
        return error.description
    }
}

/// A registry from config lines (a listener is prepended so the config is complete,
/// so rule N of `lines` is at `main.conf:N+1`).
func registry(_ lines: String) throws -> Registry {
    try parseConfig("listen 127.0.0.1:3128\n" + lines).registry
}

func v4(_ text: String) -> IPAddress {
    guard let address = IPv4Address(strict: text) else {
        Issue.record("bad test address \(text)")
        return .v4(IPv4Address(0))
    }
    return .v4(address)
}

func v6(_ text: String) -> IPAddress {
    guard let address = IPv6Address(text: text) else {
        Issue.record("bad test address \(text)")
        return .v6(IPv6Address(high: 0, low: 0))
    }
    return .v6(address)
}

func host(_ text: String) -> Host {
    let bracketed = text.hasPrefix("[")
    switch HostNormalizer.normalize(text, bracketed: bracketed) {
    case .success(let host): return host
    case .failure(let error):
        Issue.record("bad test host \(text): \(error)")
        return .name("invalid")
    }
}
