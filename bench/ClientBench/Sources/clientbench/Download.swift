import RelayClient
import RelayCore

/// One large body through the relay, read to its end and dropped.
enum Download {
    static func run(_ options: Options) async throws -> String {
        let url = try options.string("url")
        let client = RelayHTTPClient(configuration: RelayHTTPClientConfiguration(relays: try options.relays()))
        let before = ProcessMemory.residentKiB
        let start = ContinuousClock.now
        let response = try await client.execute("GET", url)
        guard response.status == 200 else { throw BenchError("GET \(url) answered \(response.status)") }
        var bytes = 0
        for try await chunk in response.body { bytes += chunk.count }
        let elapsed = seconds(since: start)
        return "bytes=\(bytes) seconds=\(fixed(elapsed, 3)) mib_s=\(fixed(Double(bytes) / elapsed / 1_048_576, 0))"
            + " rss_before_kib=\(before) peak_rss_kib=\(ProcessMemory.peakKiB)"
    }
}

/// One large generated body sent through the relay with its `Content-Length`.
enum Upload {
    /// 64 KiB chunks adding up to `total` bytes, made as they are asked for.
    struct Chunks: AsyncSequence, Sendable {
        let total: Int

        struct AsyncIterator: AsyncIteratorProtocol {
            var left: Int
            let chunk = [UInt8](repeating: 0x5A, count: 64 * 1024)
            mutating func next() async -> [UInt8]? {
                guard left > 0 else { return nil }
                let count = Swift.min(left, chunk.count)
                left -= count
                return count == chunk.count ? chunk : Array(chunk[..<count])
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(left: total) }
    }

    static func run(_ options: Options) async throws -> String {
        let url = try ClientURL(parsing: try options.string("url"))
        guard let total = Int(try options.string("bytes")), total > 0 else { throw UsageError(message: "--bytes: not a count") }
        let client = RelayHTTPClient(configuration: RelayHTTPClientConfiguration(relays: try options.relays()))
        let before = ProcessMemory.residentKiB
        let start = ContinuousClock.now
        let response = try await client.execute(RelayHTTPClientRequest(method: "POST", url: url,
                                                                      body: .stream(Chunks(total: total), length: UInt64(total))))
        guard response.status == 200 else { throw BenchError("POST \(url) answered \(response.status)") }
        let answer = String(decoding: try await response.body.collect(upTo: 4096), as: UTF8.self)
        guard answer == "received \(total)\n" else { throw BenchError("the sink answered \(answer)") }
        let elapsed = seconds(since: start)
        return "bytes=\(total) seconds=\(fixed(elapsed, 3)) mib_s=\(fixed(Double(total) / elapsed / 1_048_576, 0))"
            + " rss_before_kib=\(before) peak_rss_kib=\(ProcessMemory.peakKiB)"
    }
}
