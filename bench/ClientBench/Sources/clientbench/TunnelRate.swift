import RelayClient
import Synchronization

/// Tunnels opened and closed: `--count` in all, `--concurrency` at a time, each a
/// `RelayTunnel` carrying one `Connection: close` GET to the server's close, the work
/// `curl -p` does for each URL.
enum TunnelRate {
    static func run(_ options: Options) async throws -> String {
        let host = try options.string("host")
        let port = try options.port("port")
        let path = options.string("path", default: "/")
        let concurrency = try options.count("concurrency", default: 16)
        let count = try options.count("count", default: 5000)
        let tunnelOptions = RelayTunnelOptions(relays: RelaySelector(try options.relays()))
        let request = Array("GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n\r\n".utf8)
        let claimed = Ticket()
        let start = ContinuousClock.now
        let done = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var done = 0
                    while claimed.next() <= count {
                        let tunnel = RelayTunnel(options: tunnelOptions)
                        try await tunnel.connect(host: host, port: port)
                        try await tunnel.write(request)
                        var answer: [UInt8] = []
                        while true {
                            let bytes = try await tunnel.read()
                            if bytes.isEmpty { break }
                            answer += bytes
                        }
                        await tunnel.close()
                        guard answer.starts(with: Array("HTTP/1.1 200".utf8)) else {
                            throw BenchError("the server answered \(String(decoding: answer.prefix(40), as: UTF8.self))")
                        }
                        done += 1
                    }
                    return done
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = seconds(since: start)
        return "tunnels=\(done) concurrency=\(concurrency) seconds=\(fixed(elapsed, 3)) per_s=\(fixed(Double(done) / elapsed, 0))"
    }
}
