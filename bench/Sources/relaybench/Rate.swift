#if canImport(Glibc)
import Foundation
import Synchronization

/// Tunnels opened and closed per second by concurrent clients, each looping: connect,
/// (TLS to the proxy), (CONNECT and read the 2xx head), (TLS to the upstream), send 64
/// bytes, read the echo, close. `--handshake-only` stops each loop after the proxy's TLS
/// handshake: the bare handshake rate.
enum Rate {
    /// Totals the worker threads add into when they finish.
    private final class Tally: Sendable {
        let completed = Atomic<Int>(0)
        let failed = Atomic<Int>(0)
        let requests = Atomic<Int>(0)
        let reconnects = Atomic<Int>(0)
        let handshakes = Atomic<Int>(0)
        let resumed = Atomic<Int>(0)
        let firstError = Mutex<String?>(nil)
    }

    static func run(_ options: Options) throws {
        let route = try options.route()
        let clients = max(try options.int("clients", default: 16), 1)
        let limitSeconds = try options.seconds("seconds", default: 5)
        let auth = try ProxyAuthSettings(options)
        if auth != nil, route.connectTarget == nil {
            throw UsageError(message: "--auth needs --mode connect")
        }
        let tls = try TLSClientSettings(options)
        if auth != nil, tls != nil {
            throw UsageError(message: "--auth and TLS are not combined here")
        }
        // The proxy's CPU per tunnel is the figure noise moves least: the rate also carries
        // how the 2 cores were shared between the clients and the proxy.
        let pid = options.optionalString("pid").flatMap { Int32($0) }
        let cpuBefore = pid.map { ProcessTree.cpuSeconds(of: $0) }
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
                var client: ProxyAuthClient?
                if let auth {
                    do {
                        client = try ProxyAuthClient(auth, route: route)
                    } catch {
                        tally.firstError.withLock { if $0 == nil { $0 = "\(error)" } }
                        tally.failed.add(1, ordering: .relaxed)
                        return
                    }
                }
                let tlsClient = tls.map { TLSTunnelClient($0, route: route) }
                do {
                    try tlsClient?.primeSession()
                } catch {
                    tally.firstError.withLock { if $0 == nil { $0 = "\(error)" } }
                    tally.failed.add(1, ordering: .relaxed)
                    return
                }
                while monotonicNanos() < deadline {
                    do {
                        if let tlsClient, let tls {
                            let stream = try tlsClient.open(stopAfterProxyHandshake: tls.handshakeOnly)
                            defer { stream.shut() }
                            if !tls.handshakeOnly {
                                try message.withUnsafeBytes { try stream.writeAll($0) }
                                try reply.withUnsafeMutableBytes { try stream.readExact($0) }
                            }
                            completed += 1
                            continue
                        }
                        let fd = try client?.openTunnel() ?? Socket.openTunnel(route)
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
                if let client {
                    tally.requests.add(client.requests, ordering: .relaxed)
                    tally.reconnects.add(client.reconnects, ordering: .relaxed)
                }
                if let tlsClient {
                    tally.handshakes.add(tlsClient.handshakes, ordering: .relaxed)
                    tally.resumed.add(tlsClient.resumed, ordering: .relaxed)
                }
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
        if let pid, let cpuBefore, completed > 0 {
            let cpu = ProcessTree.cpuSeconds(of: pid) - cpuBefore
            fields.append(("proxy_cpu_us", fixed(1e6 * cpu / Double(completed), 0)))
        }
        if let auth {
            // Which handshake ran, and what it cost in requests: a 407 round trip shows here.
            let attempts = max(completed + failed, 1)
            fields += [
                ("auth", auth.scheme.rawValue),
                ("auth_mode", auth.mode),
                ("requests_per_tunnel", fixed(Double(tally.requests.load(ordering: .relaxed)) / Double(attempts), 2)),
                ("reconnects", String(tally.reconnects.load(ordering: .relaxed))),
            ]
        }
        if let tls {
            // A resumed mode whose sessions were not resumed would measure full handshakes.
            let handshakes = max(tally.handshakes.load(ordering: .relaxed), 1)
            fields += [
                ("tls", tls.version.rawValue),
                ("tls_mode", tls.resume ? "resumed" : "full"),
                ("resumed_pct", fixed(100 * Double(tally.resumed.load(ordering: .relaxed)) / Double(handshakes), 1)),
            ]
        }
        if let error = tally.firstError.withLock({ $0 }) {
            fields.append(("first_error", "\"\(error)\""))
        }
        report("rate", options.label, fields)
    }
}
#endif
