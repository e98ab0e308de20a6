#if canImport(Glibc)
import Glibc
#endif

/// 64-byte ping-pong through one tunnel (TCP_NODELAY on the client and the upstream):
/// percentiles of the round-trip time, after a short warm-up.
enum Latency {
    static func run(_ options: Options) throws {
        let route = try options.route()
        let count = try options.int("count", default: 20_000)
        let limitSeconds = try options.seconds("seconds", default: 5)
        let size = try options.int("size", default: 64)

        let fd = try Socket.openTunnel(route)
        defer { close(fd) }
        let message = [UInt8](repeating: UInt8(ascii: "E"), count: max(size, 1))
        var reply = [UInt8](repeating: 0, count: message.count)
        func roundTrip() throws {
            try message.withUnsafeBytes { try Socket.writeAll(fd, $0) }
            try reply.withUnsafeMutableBytes { try Socket.readExact(fd, $0) }
        }
        for _ in 0..<200 { try roundTrip() }

        var samples: [UInt64] = []
        samples.reserveCapacity(count)
        let start = monotonicNanos()
        let deadline = start + UInt64(limitSeconds * 1e9)
        while samples.count < count {
            let before = monotonicNanos()
            try roundTrip()
            let after = monotonicNanos()
            samples.append(after - before)
            if after >= deadline { break }
        }
        samples.sort()
        func percentile(_ p: Double) -> Double {
            let index = min(samples.count - 1, Int(Double(samples.count) * p))
            return Double(samples[index]) / 1000
        }
        let mean = Double(samples.reduce(0, +)) / Double(samples.count) / 1000
        report("latency", options.label, [
            ("p50_us", fixed(percentile(0.50), 1)),
            ("p99_us", fixed(percentile(0.99), 1)),
            ("mean_us", fixed(mean, 1)),
            ("samples", String(samples.count)),
        ])
    }
}
