/// How many helper processes to run and how hard to drive them; the names follow Squid's
/// `auth_param … children N concurrency=M` so ops can carry numbers over.
public struct HelperPoolConfiguration: Sendable, Equatable {
    /// Processes to run (for stateful schemes: the most running at once, started on demand).
    public var processes: Int
    /// Requests in flight per process, each tagged with a channel id. 0 means the helper
    /// does not speak channel ids (basic_ncsa_auth): one bare request at a time.
    public var concurrency: Int
    /// Requests allowed to wait for a free channel; more are answered `.overloaded`.
    public var maxQueued: Int
    /// From the call to the answer; past it the request is answered as a broken helper.
    public var requestTimeout: Duration
    /// Longest answer line; NTLM and Negotiate tokens are long, but a helper that writes
    /// more than this without a newline is broken and is restarted.
    public var maxLineLength: Int
    /// Least time between two starts of one helper process.
    public var minimumRestartInterval: Duration

    public init(processes: Int = 5, concurrency: Int = 0, maxQueued: Int = 256,
                requestTimeout: Duration = .seconds(10), maxLineLength: Int = 64 * 1024,
                minimumRestartInterval: Duration = .seconds(1)) {
        precondition(processes >= 1, "a helper pool needs at least one process")
        precondition(concurrency >= 0 && maxQueued >= 0 && maxLineLength >= 1024, "bad helper pool limits")
        self.processes = processes
        self.concurrency = concurrency
        self.maxQueued = maxQueued
        self.requestTimeout = requestTimeout
        self.maxLineLength = maxLineLength
        self.minimumRestartInterval = minimumRestartInterval
    }
}
