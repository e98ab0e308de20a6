import RelayClient
import Synchronization

/// Small GETs over kept-alive connections: `--concurrency` tasks on one `RelayHTTPClient`,
/// `--requests` responses in all, each read whole. The client has the library's defaults,
/// as an app that configures nothing gets them.
enum KeepAliveGets {
    static func run(_ options: Options) async throws -> String {
        let url = try options.string("url")
        let concurrency = try options.count("concurrency", default: 16)
        let requests = try options.count("requests", default: 20_000)
        let client = RelayHTTPClient(configuration: RelayHTTPClientConfiguration(relays: try options.relays()))
        let claimed = Ticket()
        let start = ContinuousClock.now
        let counts = try await withThrowingTaskGroup(of: (done: Int, bytes: Int).self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var done = 0
                    var bytes = 0
                    while claimed.next() <= requests {
                        let response = try await client.execute("GET", url)
                        guard response.status == 200 else { throw BenchError("GET \(url) answered \(response.status)") }
                        for try await chunk in response.body { bytes += chunk.count }
                        done += 1
                    }
                    return (done, bytes)
                }
            }
            return try await group.reduce(into: (done: 0, bytes: 0)) { $0.done += $1.done; $0.bytes += $1.bytes }
        }
        let elapsed = seconds(since: start)
        client.closeIdleConnections()
        return "requests=\(counts.done) body_bytes=\(counts.bytes) concurrency=\(concurrency) seconds=\(fixed(elapsed, 3))"
            + " per_s=\(fixed(Double(counts.done) / elapsed, 0)) peak_rss_kib=\(ProcessMemory.peakKiB)"
    }
}

/// A measurement that could not complete.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Numbers handed out once each, to tasks sharing a fixed amount of work.
final class Ticket: Sendable {
    private let taken = Atomic<Int>(0)
    /// 1, 2, 3, ... across all callers.
    func next() -> Int { taken.add(1, ordering: .relaxed).newValue }
}
