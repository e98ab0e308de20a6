import Glibc
import RelayCore
import RelayServer

/// `dynrelay demo`: the embedded default, so a fresh checkout relays something at once.
enum DemoCommand {
    static let appAddress = (ip: "127.0.0.1", port: UInt16(8081))

    static func embeddedConfig(listen: String) -> String {
        """
        # dynrelay embedded demo configuration (dynrelay demo)
        listen \(listen)
        state-dir ./.dynrelay-state
        # the built-in demo app server, registered by address
        server \(appAddress.ip):\(appAddress.port)
        """
    }

    static func run(listen: String?) -> Never {
        let text = embeddedConfig(listen: listen ?? "127.0.0.1:3128")
        let config: RelayConfig
        do {
            config = try ConfigParser.parse(text: text, file: "<embedded>") { pattern, _ in
                throw ConfigError(location: SourceLocation(file: "<embedded>", line: 1, column: 1),
                                  message: "include \(pattern) is not allowed in the embedded config")
            }
        } catch {
            DynrelayCommand.fail("\(error)", .failure)
        }
        let app: DemoApp
        do {
            app = try DemoApp(ip: appAddress.ip, port: appAddress.port)
        } catch {
            DynrelayCommand.fail("dynrelay: cannot start the demo app on \(appAddress.ip):\(appAddress.port): \(error)", .failure)
        }
        app.start()
        let proxy = config.listeners.first.map { "\($0)" } ?? "127.0.0.1:3128"
        RelayLog.writeToStandardError("""
        dynrelay: demo app on http://\(app.address)/ (registered); try:
          curl -x http://\(proxy) http://\(app.address)/
          curl -p -x http://\(proxy) http://\(app.address)/
          curl -x http://\(proxy) http://example.com/     # refused: 403 not-registered
        audit trail: ./.dynrelay-state/audit.db (dynrelay audit verify --db ./.dynrelay-state/audit.db)

        """)
        ServeCommand.run(config: config, configPath: nil)
    }
}
