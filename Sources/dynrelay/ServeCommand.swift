import Dispatch
import Glibc
import RelayCore
import RelayServer

/// `dynrelay serve`: run until SIGTERM/SIGINT; SIGHUP reloads.
enum ServeCommand {
    static func run(configPath: String) -> Never {
        let config = ConfigLoading.loadOrExit(configPath)
        run(config: config, configPath: configPath)
    }

    /// Runs a loaded config (also used by `demo` with the embedded one, where there is no file to reload).
    static func run(config: RelayConfig, configPath: String?) -> Never {
        // A peer's reset must surface as EPIPE on write, never as a process-killing signal.
        signal(SIGPIPE, SIG_IGN)
        let logger = RelayLog(level: logLevel())
        let server: RelayServer
        do {
            server = try RelayServer(config: config, configPath: configPath, logger: logger)
        } catch {
            DynrelayCommand.fail("dynrelay: cannot start: \(error)", .failure)
        }
        server.start()
        SignalLoop(server: server).wait()
    }

    /// DYNRELAY_LOG=error|warning|notice|info|debug (default notice: refusals, failures, lifecycle).
    private static func logLevel() -> RelayLog.Level {
        getenv("DYNRELAY_LOG").flatMap { RelayLog.Level(name: String(cString: $0)) } ?? .notice
    }
}

/// Signals arrive as Dispatch sources on one queue; the main thread waits for a stop.
final class SignalLoop: Sendable {
    private let server: RelayServer
    private let queue = DispatchQueue(label: "dynrelay.signals")
    private let stop = DispatchSemaphore(value: 0)
    private nonisolated(unsafe) var sources: [DispatchSourceSignal] = []

    init(server: RelayServer) {
        self.server = server
    }

    func wait() -> Never {
        for signalNumber in [SIGTERM, SIGINT, SIGHUP] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
            source.setEventHandler { [self] in
                if signalNumber == SIGHUP {
                    server.reload()
                } else {
                    stop.signal()
                }
            }
            source.resume()
            sources.append(source)
        }
        stop.wait()
        server.shutdown()
        exit(DynrelayCommand.ExitCode.ok.rawValue)
    }
}
