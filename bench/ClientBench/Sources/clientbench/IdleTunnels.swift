import RelayClient
import Synchronization

/// Memory per idle open tunnel in this process: `--count` `RelayTunnel`s opened and held,
/// then as many `TunnelSocket`s (each with its own callback queue), `--concurrency` of
/// either opening at a time; the resident growth of each step divided by the count.
enum IdleTunnels {
    /// Counts `onOpen`s; fails the measurement on any error.
    final class Opened: TunnelSocketDelegate, Sendable {
        let count = Atomic<Int>(0)
        let errors = Atomic<Int>(0)
        func onOpen(_ socket: TunnelSocket) { count.add(1, ordering: .relaxed) }
        func onRead(_ socket: TunnelSocket) {}
        func onClose(_ socket: TunnelSocket) {}
        func onErr(_ socket: TunnelSocket, error: RelayClientError) { errors.add(1, ordering: .relaxed) }
    }

    static func run(_ options: Options) async throws -> String {
        let host = try options.string("host")
        let port = try options.port("port")
        let count = try options.count("count", default: 2000)
        let window = try options.count("concurrency", default: 16)
        let tunnelOptions = RelayTunnelOptions(relays: RelaySelector(try options.relays()))

        // One of each first, so the runtime's loop, the resolver and the library's lazily
        // made state are not counted against the tunnels.
        let warmTunnel = RelayTunnel(options: tunnelOptions)
        try await warmTunnel.connect(host: host, port: port)
        let opened = Opened()
        let warmSocket = TunnelSocket(host: host, port: port, options: tunnelOptions)
        warmSocket.delegate = opened
        warmSocket.connect()
        try await waitFor(opened, 1)
        try await Task.sleep(for: .milliseconds(200))

        let rss0 = ProcessMemory.residentKiB
        let tunnels = try await withThrowingTaskGroup(of: [RelayTunnel].self) { group in
            for lane in 0..<window {
                group.addTask {
                    var opened: [RelayTunnel] = []
                    for _ in stride(from: lane, to: count, by: window) {
                        let tunnel = RelayTunnel(options: tunnelOptions)
                        try await tunnel.connect(host: host, port: port)
                        opened.append(tunnel)
                    }
                    return opened
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        try await Task.sleep(for: .milliseconds(500))
        let rss1 = ProcessMemory.residentKiB

        // Each socket with its own private callback queue: the default, so the figure is
        // what an app that passes no queue pays.
        var sockets: [TunnelSocket] = []
        sockets.reserveCapacity(count)
        for _ in 0..<count {
            let socket = TunnelSocket(host: host, port: port, options: tunnelOptions)
            socket.delegate = opened
            socket.connect()
            sockets.append(socket)
            // At most `window` connecting at once, as the tunnels above: the heap's
            // high-water mark of a thousand opens at once is not what an idle socket holds.
            if sockets.count >= window { try await waitFor(opened, sockets.count + 1 - window) }
        }
        try await waitFor(opened, count + 1)
        try await Task.sleep(for: .milliseconds(500))
        let rss2 = ProcessMemory.residentKiB
        guard opened.errors.load(ordering: .relaxed) == 0 else { throw BenchError("a socket failed to open") }

        let perTunnel = Double(rss1 - rss0) / Double(count)
        let perSocket = Double(rss2 - rss1) / Double(count)
        for socket in sockets { socket.disconnect() }
        for tunnel in tunnels { await tunnel.close() }
        warmSocket.disconnect()
        await warmTunnel.close()
        return "tunnels=\(count) tunnel_kib=\(fixed(perTunnel, 2)) socket_kib=\(fixed(perSocket, 2))"
            + " rss_before_kib=\(rss0) rss_tunnels_kib=\(rss1) rss_sockets_kib=\(rss2)"
    }

    /// Waits until `target` sockets opened, at most 60 s.
    private static func waitFor(_ opened: Opened, _ target: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while opened.count.load(ordering: .relaxed) < target {
            guard ContinuousClock.now < deadline else {
                throw BenchError("\(opened.count.load(ordering: .relaxed)) of \(target) sockets opened within 60 s")
            }
            if opened.errors.load(ordering: .relaxed) > 0 { throw BenchError("a socket failed to open") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
