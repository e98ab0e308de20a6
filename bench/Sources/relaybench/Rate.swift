#if canImport(Glibc)
import Foundation
import Synchronization

/// Tunnels opened and closed per second by concurrent clients, each looping: connect,
/// (CONNECT and read the 2xx head), send 64 bytes, read the echo, close.
enum Rate {
    /// Totals the worker threads add into when they finish.
    private final class Tally: Sendable {
        let completed = Atomic<Int>(0)
        let failed = Atomic<Int>(0)
        let firstError = Mutex<String?>(nil)
    }

    static func run(_ options: Options) throws {
        let route = try options.route()
        let clients = max(try options.int("clients", default: 16), 1)
        let limitSeconds = try options.seconds("seconds", default: 5)
        let tally = Tally()
        let done = DispatchGroup()
        let start = monotonicNanos()
        let deadline = start + UInt64(limitSeconds * 1e9)
        for _ in 0..<clients {
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                let message = [UInt8](repeating: UInt8(ascii: "E"), count: 64)
                var reply = [UInt8](repeating: 0, count: 64)
                var completed = 0
                var failed = 0
                while monotonicNanos() < deadline {
                    do {
                        let fd = try Socket.openTunnel(route)
                        defer { close(fd) }
                        try message.withUnsafeBytes { try Socket.writeAll(fd, $0) }
                        try reply.withUnsafeMutableBytes { try Socket.readExact(fd, $0) }
                        completed += 1
                    } catch {
                        failed += 1
                        tally.firstError.withLock { if $0 == nil { $0 = "\(error)" } }
                        usleep(1000)
                    }
                }
                tally.completed.add(completed, ordering: .relaxed)
                tally.failed.add(failed, ordering: .relaxed)
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        done.wait()
        let elapsed = Double(monotonicNanos() - start) / 1e9
        let completed = tally.completed.load(ordering: .relaxed)
        let failed = tally.failed.load(ordering: .relaxed)
        var fields: [(String, String)] = [
            ("per_s", fixed(Double(completed) / elapsed, 0)),
            ("tunnels", String(completed)),
            ("errors", String(failed)),
            ("seconds", fixed(elapsed, 3)),
        ]
        if let error = tally.firstError.withLock({ $0 }) {
            fields.append(("first_error", "\"\(error)\""))
        }
        report("rate", options.label, fields)
    }
}
#endif
