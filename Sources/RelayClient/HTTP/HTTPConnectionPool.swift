import Synchronization

/// Idle kept-alive connections by `HTTPPoolKey`, most recently parked first. A connection
/// idle longer than `maxIdle`, or whose peer spoke or closed while it idled, is closed
/// instead of handed out.
final class HTTPConnectionPool: Sendable {
    let maxIdle: Duration
    let maxIdlePerKey: Int
    private let idle = Mutex<[HTTPPoolKey: [HTTPClientConnection]]>([:])

    init(maxIdle: Duration, maxIdlePerKey: Int) {
        self.maxIdle = maxIdle
        self.maxIdlePerKey = maxIdlePerKey
    }

    /// An idle connection for `key` that can still be used, if any.
    func checkout(_ key: HTTPPoolKey) -> HTTPClientConnection? {
        var stale: [HTTPClientConnection] = []
        let found: HTTPClientConnection? = idle.withLock { idle in
            var list = idle[key] ?? []
            defer { idle[key] = list.isEmpty ? nil : list }
            while let connection = list.popLast() {
                if connection.reusable(maxIdle: maxIdle) { return connection }
                stale.append(connection)
            }
            return nil
        }
        for connection in stale { connection.close() }
        return found
    }

    /// Parks a connection whose last response ended cleanly.
    func park(_ connection: HTTPClientConnection) {
        connection.park()
        let evicted: HTTPClientConnection? = idle.withLock { idle in
            var list = idle[connection.key] ?? []
            list.append(connection)
            let first = list.count > maxIdlePerKey ? list.removeFirst() : nil
            idle[connection.key] = list
            return first
        }
        evicted?.close()
    }

    /// How many connections idle for `key` (tests read it).
    func idleCount(_ key: HTTPPoolKey) -> Int {
        idle.withLock { $0[key]?.count ?? 0 }
    }

    /// Closes every idle connection.
    func closeAll() {
        let all = idle.withLock { idle in
            defer { idle = [:] }
            return idle.values.flatMap { $0 }
        }
        for connection in all { connection.close() }
    }
}
