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

    /// The defaults from the contract unless overridden.
    public init(header: Duration = .seconds(10), connect: Duration = .seconds(10),
                idle: Duration = .seconds(300), drain: Duration = .seconds(30)) {
        self.header = header
        self.connect = connect
        self.idle = idle
        self.drain = drain
    }
}
