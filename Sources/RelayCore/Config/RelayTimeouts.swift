/// Deadlines the event loops enforce.
public struct RelayTimeouts: Sendable, Equatable {
    /// From accept until the request head is complete.
    public var header: Duration
    /// For the upstream TCP connect.
    public var connect: Duration
    /// A tunnel or keep-alive connection with no bytes either way is closed after this.
    public var idle: Duration
    /// On shutdown, how long established tunnels may finish.
    public var drain: Duration
    /// A direction with bytes queued for a peer that takes none of them for this long ends
    /// its tunnel or connection (`stalled`): a stalled peer must not pin kernel buffers
    /// until the idle timeout.
    public var stall: Duration
    /// How often refusals counted before any request (header timeouts, connection limits)
    /// are written as one row per source.
    public var refusalSummary: Duration

    /// The defaults from the contract unless overridden.
    public init(header: Duration = .seconds(10), connect: Duration = .seconds(10),
                idle: Duration = .seconds(300), drain: Duration = .seconds(30),
                stall: Duration = .seconds(60), refusalSummary: Duration = .seconds(10)) {
        self.header = header
        self.connect = connect
        self.idle = idle
        self.drain = drain
        self.stall = stall
        self.refusalSummary = refusalSummary
    }
}
