import RelayIO
import Synchronization

/// Where the client library's I/O runs: a small group of RelayIO event loops (epoll, one
/// thread each, started on first use), a resolver pool so getaddrinfo never runs on a loop
/// or on a caller's thread, and the TLS contexts built so far. Streams of any number share
/// these threads; no stream has a thread of its own.
///
/// Loops live as long as the process, so make one runtime and keep it: `shared` is the one
/// the library uses unless told otherwise.
public final class RelayClientRuntime: Sendable {
    /// One loop, made on first use.
    public static let shared = RelayClientRuntime(loopCount: 1)

    /// Loops in the group.
    public let loopCount: Int
    private let group: Mutex<EventLoopGroup?> = Mutex(nil)
    let resolver: Resolver
    let tlsContexts = TLSContextCache()

    /// A runtime whose streams are spread over `loopCount` loops; nothing starts until the
    /// first connect.
    public init(loopCount: Int = 1, resolverThreads: Int = 2) {
        precondition(loopCount > 0, "a client runtime needs at least one loop")
        self.loopCount = loopCount
        resolver = Resolver(threads: resolverThreads, maxWaiting: 256)
    }

    /// The loop for the next stream, round robin.
    func nextLoop() -> EventLoop {
        group.withLock { group in
            if let group { return group.next() }
            let made = EventLoopGroup(count: loopCount)
            group = made
            return made.next()
        }
    }
}
