#if canImport(Glibc)
import Foundation
import Synchronization

/// Resident memory a proxy spends per open idle tunnel: VmRSS of the proxy (and any
/// workers it forked) before, then with N tunnels open, each having carried one 64-byte
/// echo so every tunnel is established end to end (with `--upstream-tls`, after its
/// end-to-end TLS handshake: the idle inspected tunnel); (after - before) / N.
enum Idle {
    static func run(_ options: Options) throws {
        let route = try options.route()
        let tunnels = max(try options.int("tunnels", default: 10_000), 1)
        let threads = max(try options.int("threads", default: 8), 1)
        let settle = try options.seconds("settle", default: 2)
        let tls = try TLSClientSettings(options)
        guard let pidText = options.optionalString("pid"), let pid = Int32(pidText) else {
            throw UsageError(message: "--pid PID (the proxy to measure) is required")
        }
        guard let before = ProcessTree.rssBytes(of: pid) else {
            throw SocketError(operation: "read VmRSS of pid \(pid)", code: ESRCH)
        }

        let opened = Mutex<[StreamHandle]>([])
        let firstError = Mutex<String?>(nil)
        let done = DispatchGroup()
        let start = monotonicNanos()
        for worker in 0..<threads {
            let share = tunnels / threads + (worker < tunnels % threads ? 1 : 0)
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                let message = [UInt8](repeating: UInt8(ascii: "E"), count: 64)
                var reply = [UInt8](repeating: 0, count: 64)
                var mine: [StreamHandle] = []
                let tlsClient = tls.map { TLSTunnelClient($0, route: route) }
                for _ in 0..<share {
                    do {
                        let stream = try tlsClient?.open() ?? ClientStream(fd: Socket.openTunnel(route))
                        mine.append(StreamHandle(stream: stream))
                        try message.withUnsafeBytes { try stream.writeAll($0) }
                        try reply.withUnsafeMutableBytes { try stream.readExact($0) }
                    } catch {
                        firstError.withLock { if $0 == nil { $0 = "\(error)" } }
                        break
                    }
                }
                opened.withLock { $0.append(contentsOf: mine) }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        done.wait()
        let openSeconds = Double(monotonicNanos() - start) / 1e9
        let descriptors = opened.withLock { $0 }
        defer { descriptors.forEach { $0.stream.shut() } }
        if let error = firstError.withLock({ $0 }) {
            throw SocketError(operation: "opened \(descriptors.count) of \(tunnels) tunnels; first failure: \(error)", code: EPROTO)
        }
        usleep(useconds_t(settle * 1e6))
        guard let after = ProcessTree.rssBytes(of: pid) else {
            throw SocketError(operation: "proxy pid \(pid) exited while tunnels were open", code: ESRCH)
        }
        let perTunnel = Double(after - before) / Double(tunnels)
        report("idle", options.label, [
            ("kib_per_tunnel", fixed(perTunnel / 1024, 2)),
            ("rss_before_kib", String(before / 1024)),
            ("rss_after_kib", String(after / 1024)),
            ("tunnels", String(tunnels)),
            ("open_seconds", fixed(openSeconds, 2)),
        ])
    }
}

/// An open stream parked until the measurement ends; only the main thread touches it then.
private struct StreamHandle: @unchecked Sendable {
    let stream: ClientStream
}
#endif
