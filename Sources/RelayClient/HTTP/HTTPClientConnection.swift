import RelayCore
import Synchronization

/// One connection of the HTTP client: to a relay (absolute-form requests), or a tunnel
/// through a relay to one origin. Used by one request at a time; the pool hands it over.
///
/// While it idles in the pool a read stays pending on it, so a server that closes (or
/// sends anything unasked) is seen before the connection is reused; the next response
/// takes that read's bytes as its first.
final class HTTPClientConnection: Sendable {
    let stream: any ClientByteStream
    let key: HTTPPoolKey
    /// The auth sessions bound to this connection (NTLM and Negotiate authenticate it, not a request).
    let auth: Mutex<ConnectionAuth>
    private let idle: Mutex<Idle>

    struct ConnectionAuth: Sendable {
        var proxy: ClientAuthSession?
        var servers: [ClientOrigin: ClientAuthSession] = [:]
    }

    private struct Idle: Sendable {
        var since: ContinuousClock.Instant = .now
        var watch: Task<[UInt8], any Error>?
        var watchEnded = false
    }

    init(stream: any ClientByteStream, key: HTTPPoolKey) {
        self.stream = stream
        self.key = key
        auth = Mutex(ConnectionAuth())
        idle = Mutex(Idle())
    }

    /// Starts watching for the peer closing while the connection idles.
    func park() {
        let stream = self.stream
        let task = Task<[UInt8], any Error> { [weak self] in
            defer { self?.idle.withLock { $0.watchEnded = true } }
            return try await stream.read(maxBytes: HTTPResponseReader.readSize)
        }
        idle.withLock {
            $0.since = .now
            $0.watch = task
            $0.watchEnded = false
        }
    }

    /// Whether the connection may carry another request: nothing arrived while it idled
    /// (an end, a reset or stray bytes all make it unusable) and it idled at most `maxIdle`.
    func reusable(maxIdle: Duration) -> Bool {
        idle.withLock { !$0.watchEnded && ContinuousClock.now - $0.since <= maxIdle }
    }

    /// The idle read, if one is pending; the first read of the next response awaits it.
    func takeWatch() -> Task<[UInt8], any Error>? {
        idle.withLock {
            let watch = $0.watch
            $0.watch = nil
            return watch
        }
    }

    func close() {
        stream.close()
    }
}
