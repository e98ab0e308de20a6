import Glibc

/// Reads a config file and its includes from disk and parses them.
///
/// This is the one place RelayCore touches the filesystem. It lives here rather than in
/// RelayIO because both `check-config` and `serve` (and reload) need exactly the same
/// reading rules, and keeping it next to the parser keeps error locations (paths as
/// written, relative includes against the including file) consistent with `ConfigParser`.
public enum ConfigFileLoader {
    /// Largest config file read; anything bigger is a mistake (`include /dev/zero`).
    public static let maxFileSize = 4 * 1024 * 1024

    /// Loads and checks the config at `path`.
    public static func load(path: String) throws(ConfigError) -> RelayConfig {
        let text = try readFile(path, reportedAt: SourceLocation(file: path, line: 1, column: 1))
        return try ConfigParser.parse(text: text, file: path, includeResolver: resolveInclude)
    }

    /// The filesystem `IncludeResolver`: a relative pattern is taken against the including
    /// file's directory; a glob matching nothing is fine (an empty conf.d), a plain path
    /// that does not exist is not.
    public static func resolveInclude(_ pattern: String, including: String) throws -> [(path: String, text: String)] {
        let here = SourceLocation(file: including, line: 1, column: 1)
        let full = PathLexical.resolve(pattern, relativeTo: including)
        let isGlob = full.contains { $0 == "*" || $0 == "?" || $0 == "[" }
        let paths = isGlob ? try expand(full, reportedAt: here) : [full]
        var files: [(path: String, text: String)] = []
        for path in paths {
            files.append((path, try readFile(path, reportedAt: here)))
        }
        return files
    }

    private static func expand(_ pattern: String, reportedAt location: SourceLocation) throws(ConfigError) -> [String] {
        var result = glob_t()
        defer { globfree(&result) }
        // A directory that does not exist simply matches nothing (conf.d may be absent),
        // but one that exists and cannot be read must fail the load: silently skipping it
        // could drop `deny` rules.
        let status = glob(pattern, 0, { _, error in error == ENOENT || error == ENOTDIR ? 0 : 1 }, &result)
        switch status {
        case 0:
            break
        case GLOB_NOMATCH:
            return []
        case GLOB_ABORTED:
            throw ConfigError(location: location, message: "cannot expand include '\(pattern)': a directory on its path is not readable")
        default:
            throw ConfigError(location: location, message: "cannot expand include '\(pattern)': out of memory")
        }
        var paths: [String] = []
        for index in 0..<Int(result.gl_pathc) {
            if let cPath = result.gl_pathv[index] { paths.append(String(cString: cPath)) }
        }
        // Byte order, not the locale's collation: the same files load in the same order
        // on every host.
        return paths.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }

    private static func readFile(_ path: String, reportedAt location: SourceLocation) throws(ConfigError) -> String {
        func failure(_ what: String) -> ConfigError {
            ConfigError(location: location, message: "cannot read '\(path)': \(what)")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw failure(String(cString: strerror(errno))) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure(String(cString: strerror(errno))) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw failure("not a regular file") }
        guard Int(info.st_size) <= maxFileSize else { throw failure("larger than \(maxFileSize) bytes") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure(String(cString: strerror(errno)))
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > maxFileSize { throw failure("larger than \(maxFileSize) bytes") }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw failure("not valid UTF-8") }
        return text
    }
}
