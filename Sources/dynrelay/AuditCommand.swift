import Glibc
import RelayCore
import RelayServer

/// `dynrelay audit verify`: recompute the hash chain for a reviewer.
enum AuditCommand {
    static func verify(configPath: String?, dbPath: String?) -> Never {
        let path: String
        if let dbPath {
            path = dbPath
        } else {
            path = ConfigLoading.loadOrExit(configPath ?? DynrelayCommand.defaultConfigPath).stateDir + "/audit.db"
        }
        switch AuditLog.verify(path: path) {
        case .ok(let records):
            print("\(path): ok: \(records) records, hash chain intact")
            exit(DynrelayCommand.ExitCode.ok.rawValue)
        case .broken(let seq, let why):
            DynrelayCommand.fail("\(path): broken at seq \(seq): \(why)", .failure)
        }
    }
}
