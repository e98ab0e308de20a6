import FuzzSupport
import RelayCore

/// The config parser on a config file (and, after a NUL byte, the text of the one file its
/// includes can reach): it accepts or names a place inside the text it read; an accepted
/// config names its rules by places that exist and decides hosts without trapping.
@main
enum FuzzConfig {
    static func main() {
        FuzzDriver.run(fuzzConfig)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let nul = input.firstIndex(of: 0) ?? input.count
    let files = [
        ConfigFiles.main: String(decoding: input[..<nul], as: UTF8.self),
        ConfigFiles.dropIn: nul < input.count ? String(decoding: input[(nul + 1)...], as: UTF8.self) : "",
    ]
    do {
        let config = try ConfigParser.parse(text: files[ConfigFiles.main]!, file: ConfigFiles.main) { pattern, including in
            try ConfigFiles.resolve(pattern, including: including, files: files)
        }
        invariant(config.sourceFiles.first == ConfigFiles.main, "source files \(config.sourceFiles)")
        for rule in config.rules {
            ConfigFiles.checkInside(rule.location, files)
        }
        for host in ["app1.corp.example", "x.intranet.corp.example", "10.20.99.1", "[2001:db8:10::1]", "127.0.0.1"] {
            if case .success(let normalized) = HostNormalizer.normalize(host, bracketed: false) {
                for port: UInt16 in [22, 443, 8080] {
                    _ = config.registry.decide(host: normalized, port: port)
                }
            }
        }
    } catch {
        ConfigFiles.checkInside(error.location, files)
    }
    return 0
}

/// The two files a fuzz input holds, and an include resolver over them.
enum ConfigFiles {
    static let main = "/etc/dynrelay/dynrelay.conf"
    static let dropIn = "/etc/dynrelay/conf.d/extra.conf"

    /// A glob reaches the drop-in; a plain path reaches either file by its name.
    static func resolve(_ pattern: String, including: String, files: [String: String]) throws -> [(path: String, text: String)] {
        if pattern.contains(where: { "*?[".contains($0) }) {
            return [(dropIn, files[dropIn]!)]
        }
        for (path, text) in files.sorted(by: { $0.key < $1.key }) where pattern.hasSuffix(String(path.split(separator: "/").last!)) {
            return [(path, text)]
        }
        throw ConfigError(location: SourceLocation(file: including, line: 1, column: 1), message: "cannot read '\(pattern)'")
    }

    /// A location must name a file that was read, a line in it, and a column on that line
    /// (one past its end for "missing value" errors).
    static func checkInside(_ location: SourceLocation, _ files: [String: String]) {
        guard let text = files[location.file] else {
            return invariant(false, "location \(location) names no file that was read")
        }
        // Scalars, not Characters: "\r\n" is one Character and would hide a line.
        let lines = Array(text.unicodeScalars).split(separator: "\n", omittingEmptySubsequences: false)
        invariant((1...lines.count).contains(location.line), "line of \(location) outside \(lines.count) lines")
        let width = lines[location.line - 1].count
        invariant((1...(width + 1)).contains(location.column), "column of \(location) outside a line of \(width)")
    }
}
