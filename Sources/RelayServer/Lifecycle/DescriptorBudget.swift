import Glibc
import RelayCore

/// Whether `max-connections` fits in the process's descriptor limit (RLIMIT_NOFILE): each
/// connection holds two sockets (client and upstream) and each loop keeps up to
/// `idlePipesPerLoop` idle pipes. A tunnel moving bulk bytes also borrows a pipe per busy
/// direction, which this count leaves out (they come and go with the traffic): the
/// budget is the least the limit must hold. Past the limit the kernel refuses accepts and connects (EMFILE): the relay
/// then answers `503 out-of-descriptors`, but ops should hear of it at start, not under load.
public enum DescriptorBudget {
    /// Descriptors the process holds besides its connections: listeners, epoll and wake-up
    /// descriptors, the audit database and its WAL, helper pipes, standard streams.
    static let fixedOverhead = 64
    /// Idle pipes a loop's pool keeps (two descriptors each).
    static let idlePipesPerLoop = 64

    /// Descriptors `config` needs with every connection open and the pipe pools full.
    public static func needed(_ config: RelayConfig, loops: Int) -> Int {
        2 * config.limits.maxConnections + 2 * idlePipesPerLoop * loops + fixedOverhead
    }

    /// Raises the soft descriptor limit to the hard one (allowed without privilege, as
    /// nginx's and haproxy's start-up do); returns the limit in force afterwards.
    @discardableResult
    public static func raiseSoftLimit() -> Int {
        guard var limit = current() else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// The descriptor limit in force now (the soft one).
    public static var softLimit: Int { current().map { Int(clamping: $0.rlim_cur) } ?? 0 }

    /// The descriptor limit a raise can reach: the hard limit.
    public static var hardLimit: Int { current().map { Int(clamping: $0.rlim_max) } ?? 0 }

    private static func current() -> rlimit? {
        var limit = rlimit()
        return getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 ? limit : nil
    }

    /// A warning when `config` needs more descriptors than `limit`; nil when it fits.
    public static func warning(_ config: RelayConfig, loops: Int, limit: Int) -> String? {
        let needed = needed(config, loops: loops)
        guard needed > limit else { return nil }
        let fits = max(0, (limit - 2 * idlePipesPerLoop * loops - fixedOverhead) / 2)
        return "max-connections \(config.limits.maxConnections) needs about \(needed) file descriptors "
            + "(2 per connection, plus pipes and \(fixedOverhead) for the rest) but RLIMIT_NOFILE is \(limit): "
            + "past about \(fits) connections clients get 503 out-of-descriptors; lower max-connections "
            + "or raise LimitNOFILE="
    }
}
