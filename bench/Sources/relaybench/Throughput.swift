#if canImport(Glibc)
import Glibc
#endif

/// Single-stream upload throughput through one tunnel. The upstream sinks and acknowledges
/// every 16 MiB, so the figure counts bytes that crossed the proxy, not bytes parked in
/// socket buffers: the client stops on a 16 MiB boundary (byte or time limit) and the clock
/// stops when the last acknowledgement arrives.
enum Throughput {
    static func run(_ options: Options) throws {
        let route = try options.route()
        let limitBytes = try options.size("bytes", default: 2 << 30)
        let limitSeconds = try options.seconds("seconds", default: 5)
        let pid = options.optionalString("pid").flatMap { Int32($0) }
        let chunkSize = 1 << 20
        let segment = EchoServer.ackInterval

        let fd = try Socket.openTunnel(route)
        defer { close(fd) }
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 64)
        defer { chunk.deallocate() }
        chunk.initializeMemory(as: UInt8.self, repeating: UInt8(ascii: "x"))
        try [UInt8(ascii: "S")].withUnsafeBytes { try Socket.writeAll(fd, $0) }

        let cpuBefore = pid.map { ProcessTree.cpuSeconds(of: $0) }
        let start = monotonicNanos()
        let deadline = start + UInt64(limitSeconds * 1e9)
        var sent = 0
        while sent < limitBytes {
            try Socket.writeAll(fd, UnsafeRawBufferPointer(chunk))
            sent += chunkSize
            if sent % segment == 0, monotonicNanos() >= deadline { break }
        }
        let segments = sent / segment
        let acks = UnsafeMutableRawBufferPointer.allocate(byteCount: segments, alignment: 1)
        defer { acks.deallocate() }
        try Socket.readExact(fd, acks)
        let elapsed = Double(monotonicNanos() - start) / 1e9
        let received = segments * segment

        var fields: [(String, String)] = [
            ("mib_s", fixed(Double(received) / elapsed / 1_048_576, 1)),
            ("bytes", String(received)),
            ("seconds", fixed(elapsed, 3)),
        ]
        if let pid, let cpuBefore {
            let cpu = ProcessTree.cpuSeconds(of: pid) - cpuBefore
            fields.append(("proxy_cpu_pct", fixed(100 * cpu / elapsed, 0)))
        }
        report("throughput", options.label, fields)
    }
}
