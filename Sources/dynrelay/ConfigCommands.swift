import Glibc
import RelayCore

/// `dynrelay check-config`: the dry run ops run before every reload (like `nginx -t`).
enum CheckConfigCommand {
    static func run(configPath: String) -> Never {
        let config = ConfigLoading.loadOrExit(configPath)
        let servers = config.rules.filter { $0.kind == .server }.count
        let auth = config.auth.isRequired ? config.auth.schemes.map(\.rawValue).joined(separator: ",") : "none"
        print("\(configPath): ok (\(config.listeners.count) listeners, \(config.forwards.count) forwards, "
              + "\(servers) servers, \(config.rules.count - servers) denies, auth \(auth))")
        exit(DynrelayCommand.ExitCode.ok.rawValue)
    }
}

enum ConfigLoading {
    /// Loads the config or exits 1 with every error as `file:line:col: message`.
    static func loadOrExit(_ path: String) -> RelayConfig {
        do {
            return try ConfigFileLoader.load(path: path)
        } catch {
            DynrelayCommand.fail("\(error)", .failure)
        }
    }
}
