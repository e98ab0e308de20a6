import Glibc
import RelayCore
import RelayServer

/// `dynrelay audit verify|query`: the reviewer's view of the trail.
enum AuditCommand {
    /// Recomputes the hash chain.
    static func verify(configPath: String?, dbPath: String?) -> Never {
        let path = databasePath(configPath: configPath, dbPath: dbPath)
        switch AuditLog.verify(path: path) {
        case .ok(let records):
            print("\(path): ok: \(records) records, hash chain intact")
            exit(DynrelayCommand.ExitCode.ok.rawValue)
        case .broken(let seq, let why):
            DynrelayCommand.fail("\(path): broken at seq \(seq): \(why)", .failure)
        }
    }

    /// Prints the rows from `since` (inclusive) to `until` (exclusive) as JSON lines.
    static func query(configPath: String?, dbPath: String?, since: String?, until: String?) -> Never {
        let path = databasePath(configPath: configPath, dbPath: dbPath)
        do {
            try AuditLog.query(path: path, since: since, until: until) { row in
                print(row.jsonLine)
            }
        } catch {
            DynrelayCommand.fail("\(path): \(error.message)", .failure)
        }
        exit(DynrelayCommand.ExitCode.ok.rawValue)
    }

    /// Prints the pseudonym an `unknown-user` row records for the name read from standard
    /// input (read there, not from the command line, since it may be a password typed into
    /// the user-name field): a reviewer checks a suspected name without the trail holding it.
    static func pseudonym(configPath: String?) -> Never {
        let config = ConfigLoading.loadOrExit(configPath ?? DynrelayCommand.defaultConfigPath)
        guard let name = readLine(strippingNewline: true) else {
            DynrelayCommand.fail("dynrelay audit pseudonym: no name on standard input", .usage)
        }
        do {
            print(try NamePseudonyms(stateDir: config.stateDir, create: false).pseudonym(name))
        } catch {
            DynrelayCommand.fail("dynrelay audit pseudonym: \(error)", .failure)
        }
        exit(DynrelayCommand.ExitCode.ok.rawValue)
    }

    private static func databasePath(configPath: String?, dbPath: String?) -> String {
        if let dbPath { return dbPath }
        return ConfigLoading.loadOrExit(configPath ?? DynrelayCommand.defaultConfigPath).stateDir + "/audit.db"
    }
}
