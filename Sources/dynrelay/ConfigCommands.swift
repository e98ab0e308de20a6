import Glibc
import RelayCore
import RelayServer

/// `dynrelay check-config`: the dry run ops run before every reload (like `nginx -t`).
enum CheckConfigCommand {
    static func run(configPath: String) -> Never {
        let config = ConfigLoading.loadOrExit(configPath)
        let tlsWarnings: [String]
        do {
            tlsWarnings = try TLSConfigCheck.check(config)
        } catch {
            DynrelayCommand.fail("\(configPath): \(error)", .failure)
        }
        let servers = config.rules.filter { $0.kind == .server }.count
        let schemes = (config.auth.acceptsClientCertificate ? ["client-cert"] : []) + config.auth.schemes.map(\.rawValue)
        let auth = schemes.isEmpty ? "none" : schemes.joined(separator: ",")
        print("\(configPath): ok (\(config.listeners.count + config.tlsListeners.count) listeners, \(config.forwards.count) forwards, "
              + "\(servers) servers, \(config.rules.count - servers) denies, auth \(auth))")
        for warning in config.warnings {
            RelayLog.write(.warning, "\(warning)\n")
        }
        for warning in tlsWarnings {
            RelayLog.write(.warning, "\(configPath): warning: \(warning)\n")
        }
        // The daemon raises its soft limit to the hard one at start: judge against that.
        if let warning = DescriptorBudget.warning(config, loops: RelayServer.loopCount(config),
                                                  limit: DescriptorBudget.hardLimit) {
            RelayLog.write(.warning, "\(configPath): warning: \(warning)\n")
        }
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
