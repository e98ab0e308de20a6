import RelayCore
import RelayIO

/// The Squid-protocol helpers a configuration names, one pool per scheme. Built once per
/// configuration; a reload builds new pools and the old ones stop when the last
/// connection that used them is gone.
struct AuthHelpers: Sendable {
    var basic: ConcurrentHelperPool?
    var digest: ConcurrentHelperPool?
    var ntlm: StatefulHelperPool?
    var negotiate: StatefulHelperPool?

    init() {}

    /// Pools for every `auth-helper` line; their I/O runs on `loop`.
    init(_ config: AuthConfig, loop: EventLoop, log: RelayLog) {
        for helper in config.helpers {
            let command = ChildCommand(executable: helper.argv[0], arguments: Array(helper.argv.dropFirst()))
            let configuration = HelperPoolConfiguration(processes: helper.children, concurrency: helper.concurrency)
            switch helper.scheme {
            case .basic: basic = ConcurrentHelperPool(command: command, configuration: configuration, loop: loop, log: log)
            case .digest: digest = ConcurrentHelperPool(command: command, configuration: configuration, loop: loop, log: log)
            case .ntlm: ntlm = StatefulHelperPool(scheme: .ntlm, command: command, configuration: configuration, loop: loop, log: log)
            case .negotiate: negotiate = StatefulHelperPool(scheme: .negotiate, command: command, configuration: configuration, loop: loop, log: log)
            }
        }
    }

    func close() {
        basic?.close()
        digest?.close()
        ntlm?.close()
        negotiate?.close()
    }
}
