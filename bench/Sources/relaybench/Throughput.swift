#if canImport(Glibc)
import Foundation
import Synchronization

/// Upload throughput through `--streams` tunnels at once (1 by default), plain or with TLS
/// (`--proxy-tls`, `--upstream-tls`). The upstream sinks and acknowledges every 16 MiB, so
/// the figure counts bytes that crossed the proxy, not bytes parked in socket buffers: each
/// client stops on a 16 MiB boundary (byte or time limit) and the clock stops when the last
/// acknowledgement of the last stream arrives.
enum Throughput {
    static func run(_ options: Options) throws {
        let route = try options.route()
        let limitBytes = try options.size("bytes", default: 2 << 30)
        let limitSeconds = try options.seconds("seconds", default: 5)
        let streams = max(try options.int("streams", default: 1), 1)
        let pid = options.optionalString("pid").flatMap { Int32($0) }
        let tls = try TLSClientSettings(options)

        // Every stream is open (handshakes included) before the clock starts.
        var opened: [ClientStream] = []
        for _ in 0..<streams {
            if let tls {
                opened.append(try TLSTunnelClient(tls, route: route).open())
            } else {
                opened.append(ClientStream(fd: try Socket.openTunnel(route)))
            }
        }
        defer { opened.forEach { $0.shut() } }
        for stream in opened {
            try [UInt8(ascii: "S")].withUnsafeBytes { try stream.writeAll($0) }
        }

        let received = Atomic<Int>(0)
        let firstError = Mutex<String?>(nil)
        let cpuBefore = pid.map { ProcessTree.cpuSeconds(of: $0) }
        let start = monotonicNanos()
        let deadline = start + UInt64(limitSeconds * 1e9)
        let share = max(limitBytes / streams, EchoServer.ackInterval)
        let done = DispatchGroup()
        for stream in opened {
            let box = StreamBox(stream)
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                do {
                    received.add(try upload(box.stream, limit: share, deadline: deadline), ordering: .relaxed)
                } catch {
                    firstError.withLock { if $0 == nil { $0 = "\(error)" } }
                }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        done.wait()
        let elapsed = Double(monotonicNanos() - start) / 1e9
        if let error = firstError.withLock({ $0 }) {
            throw SocketError(operation: "a stream failed: \(error)", code: EPROTO)
        }
        let bytes = received.load(ordering: .relaxed)

        var fields: [(String, String)] = [
            ("mib_s", fixed(Double(bytes) / elapsed / 1_048_576, 1)),
            ("bytes", String(bytes)),
            ("seconds", fixed(elapsed, 3)),
        ]
        if streams > 1 { fields.append(("streams", String(streams))) }
        if let tls { fields.append(("tls", tls.version.rawValue)) }
        if let pid, let cpuBefore {
            let cpu = ProcessTree.cpuSeconds(of: pid) - cpuBefore
            fields.append(("proxy_cpu_pct", fixed(100 * cpu / elapsed, 0)))
        }
        report("throughput", options.label, fields)
    }

    /// Writes 1 MiB chunks until `limit` or the deadline (on a 16 MiB boundary), then waits
    /// for every acknowledgement; returns the bytes the upstream acknowledged.
    private static func upload(_ stream: ClientStream, limit: Int, deadline: UInt64) throws -> Int {
        let chunkSize = 1 << 20
        let segment = EchoServer.ackInterval
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 64)
        defer { chunk.deallocate() }
        chunk.initializeMemory(as: UInt8.self, repeating: UInt8(ascii: "x"))
        var sent = 0
        while sent < limit {
            try stream.writeAll(UnsafeRawBufferPointer(chunk))
            sent += chunkSize
            if sent % segment == 0, monotonicNanos() >= deadline { break }
        }
        let segments = sent / segment
        let acks = UnsafeMutableRawBufferPointer.allocate(byteCount: max(segments, 1), alignment: 1)
        defer { acks.deallocate() }
        try stream.readExact(UnsafeMutableRawBufferPointer(rebasing: acks[0..<segments]))
        return segments * segment
    }
}

/// Hands a stream to the one thread that uses it from then on.
private struct StreamBox: @unchecked Sendable {
    let stream: ClientStream
    init(_ stream: ClientStream) { self.stream = stream }
}
#endif
