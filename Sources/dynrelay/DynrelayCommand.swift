import Glibc
import RelayCore
import RelayServer

/// `dynrelay <subcommand> [options]`: argument parsing and exit codes, nothing else.
enum DynrelayCommand {
    static let defaultConfigPath = "/etc/dynrelay/dynrelay.conf"

    /// Exit codes ops can script against (sysexits where one fits).
    enum ExitCode: Int32 {
        case ok = 0
        case failure = 1
        case usage = 64
        case internalError = 70
    }

    static let usage = """
    usage: dynrelay serve        [--config FILE]
           dynrelay check-config [--config FILE]
           dynrelay demo         [--listen ADDR:PORT]
           dynrelay audit verify [--config FILE | --db FILE]
           dynrelay audit query  [--since TIME] [--until TIME] [--config FILE | --db FILE]
           dynrelay audit pseudonym [--config FILE]    (the name on standard input)
           dynrelay users add NAME    [--password-stdin] [--config FILE]
           dynrelay users passwd NAME [--password-stdin] [--config FILE]
           dynrelay users del NAME    [--config FILE]
           dynrelay users list        [--config FILE]
           dynrelay version
    FILE defaults to \(defaultConfigPath). TIME is UTC, 2026-12-01T04:30:00Z or a prefix of
    one (2026-12-01); --since is inclusive, --until exclusive.
    """

    static func main() -> Never {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard !arguments.isEmpty else { fail(usage, .usage) }
        let command = arguments.removeFirst()
        do {
            switch command {
            case "serve":
                var options = try Options(arguments, allowed: ["--config"])
                ServeCommand.run(configPath: options.take("--config") ?? defaultConfigPath)
            case "check-config":
                var options = try Options(arguments, allowed: ["--config"])
                CheckConfigCommand.run(configPath: options.take("--config") ?? defaultConfigPath)
            case "demo":
                var options = try Options(arguments, allowed: ["--listen"])
                DemoCommand.run(listen: options.take("--listen"))
            case "audit":
                switch arguments.first {
                case "verify":
                    var options = try Options(Array(arguments.dropFirst()), allowed: ["--config", "--db"])
                    AuditCommand.verify(configPath: options.take("--config"), dbPath: options.take("--db"))
                case "query":
                    var options = try Options(Array(arguments.dropFirst()), allowed: ["--config", "--db", "--since", "--until"])
                    AuditCommand.query(configPath: options.take("--config"), dbPath: options.take("--db"),
                                       since: options.take("--since"), until: options.take("--until"))
                case "pseudonym":
                    var options = try Options(Array(arguments.dropFirst()), allowed: ["--config"])
                    AuditCommand.pseudonym(configPath: options.take("--config"))
                default:
                    fail(usage, .usage)
                }
            case "users":
                try UsersCommand.run(arguments)
            case "version", "--version":
                print("dynrelay \(RelayVersion.current)")
                exit(ExitCode.ok.rawValue)
            case "help", "--help", "-h":
                print(usage)
                exit(ExitCode.ok.rawValue)
            default:
                fail("dynrelay: unknown command '\(command)'\n\(usage)", .usage)
            }
        } catch let error as UsageError {
            fail("dynrelay: \(error.message)\n\(usage)", .usage)
        } catch {
            fail("dynrelay: \(error)", .internalError)
        }
    }

    static func fail(_ message: String, _ code: ExitCode) -> Never {
        var line = message
        if !line.hasSuffix("\n") { line += "\n" }
        RelayLog.write(.error, line)
        exit(code.rawValue)
    }
}

struct UsageError: Error {
    let message: String
}

/// `--name value` pairs; every option is known in advance, anything else is a usage error.
struct Options {
    private var values: [String: String] = [:]

    init(_ arguments: [String], allowed: Set<String>) throws {
        var index = 0
        while index < arguments.count {
            let name = arguments[index]
            guard allowed.contains(name) else { throw UsageError(message: "unknown option '\(name)'") }
            guard index + 1 < arguments.count else { throw UsageError(message: "\(name) needs a value") }
            guard values[name] == nil else { throw UsageError(message: "\(name) given twice") }
            values[name] = arguments[index + 1]
            index += 2
        }
    }

    mutating func take(_ name: String) -> String? {
        values.removeValue(forKey: name)
    }
}
