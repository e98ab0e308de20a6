#if canImport(Glibc)
import Glibc
#endif

/// Entry point: one measurement per invocation, printed as one `result ...` line of
/// `key=value` pairs that bench/audit collects into its table.
enum AuditBench {
    static let usage = """
    usage: auditbench <command> --engine audit|sqlite --sync full|normal --db PATH [options]
      throughput [--rows 100000] [--threads 2] [--wait-every 2]
                 audit: THREADS threads append ROWS rows, every WAIT-EVERY-th with a commit
                 callback (an open row a tunnel waits for), then flush; the clock stops when
                 flush returns. sqlite: the same rows in transactions of AuditLog.maxBatchSize.
      latency    [--count 300]
                 audit: COUNT lone records on an idle writer, each timed from append to its
                 commit callback. sqlite: COUNT one-row transactions.
    common: --label NAME (copied into the result line). PATH must not exist yet.
    """

    /// Parses the command line, runs one measurement, and exits with 0, 1 (it failed) or 64 (usage).
    static func main() {
        var args = Array(CommandLine.arguments.dropFirst())
        guard let command = args.first else { fail(usage: usage) }
        args.removeFirst()
        guard ["throughput", "latency"].contains(command) else {
            if ["-h", "--help", "help"].contains(command) {
                print(usage)
                exit(0)
            }
            fail(usage: "unknown command \(command)\n\(usage)")
        }
        do {
            let options = try Options(args)
            let setup = try Setup(options)
            switch command {
            case "throughput": try Throughput.run(setup, options)
            default: try CommitLatency.run(setup, options)
            }
        } catch let error as UsageError {
            fail(usage: "auditbench: \(error.message)\n\(usage)")
        } catch {
            printError("auditbench \(command): \(error)\n")
            exit(1)
        }
    }

    private static func fail(usage text: String) -> Never {
        printError(text + "\n")
        exit(64)
    }
}

/// Writes to standard error without C's `stderr` global, which Swift 6 will not share.
func printError(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

/// What is measured and where: the part of the command line every measurement shares.
struct Setup {
    enum Engine: String {
        /// `AuditLog`, the relay's audit trail.
        case audit
        /// Plain SQLite inserts of the same rows, in C (`CSQLiteBaseline`).
        case sqlite
    }

    let engine: Engine
    /// `audit-sync full` (PRAGMA synchronous=FULL) or `normal`.
    let synchronousFull: Bool
    let databasePath: String
    let label: String

    init(_ options: Options) throws {
        guard let engine = Engine(rawValue: try options.string("engine")) else {
            throw UsageError(message: "--engine must be audit or sqlite")
        }
        self.engine = engine
        switch try options.string("sync") {
        case "full": synchronousFull = true
        case "normal": synchronousFull = false
        default: throw UsageError(message: "--sync must be full or normal")
        }
        databasePath = try options.string("db")
        guard access(databasePath, F_OK) != 0 else {
            throw UsageError(message: "--db \(databasePath) exists; every measurement starts from an empty file")
        }
        label = options.string("label", default: "unnamed")
    }

    /// The `result` line's leading fields.
    var resultPrefix: String {
        "result label=\(label) engine=\(engine.rawValue) sync=\(synchronousFull ? "full" : "normal")"
    }
}

/// A measurement that went wrong (a failed commit, a trail that does not verify); exits 1.
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
}
