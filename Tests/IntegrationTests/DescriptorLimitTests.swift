import Foundation
import Glibc
import Testing

/// The descriptor limit that leaves `pid` exactly `free` descriptors to open: the kernel
/// gives out the lowest free number and refuses one at or above the limit, so numbers freed
/// below it count as room and open ones above it do not.
func descriptorLimit(of pid: Int32, leavingFree free: Int) -> Int {
    let open = Set(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap { Int($0) })
    var room = 0
    var limit = 0
    while room < free || open.contains(limit) {
        if !open.contains(limit) { room += 1 }
        limit += 1
        if room == free { break }
    }
    return limit
}

/// Sets `pid`'s descriptor limit (soft and hard) with util-linux's prlimit.
func limitDescriptors(of pid: Int32, to limit: Int) throws {
    let result = try Subprocess.run("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile=\(limit):\(limit)"])
    guard result.status == 0 else { throw HarnessError("prlimit: \(result.stderr)") }
}

extension IntegrationSuite {
    /// Out of descriptors, the relay says so, to the client at once and in its log and
    /// trail, instead of calling the upstream unreachable or leaving clients in the backlog.
    @Suite("out of descriptors")
    struct DescriptorLimitTests {
        @Test("no descriptor left to accept: clients get 503 out-of-descriptors at once, the log names EMFILE's cause")
        func acceptWithoutDescriptors() throws {
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:1", "refusal-summary-interval 500ms"]))
            defer { relay.stop() }
            // Two more connections fit, then the process is out.
            try limitDescriptors(of: relay.pid, to: descriptorLimit(of: relay.pid, leavingFree: 2))
            var held: [TestSocket] = []
            var refusedFast = 0
            for _ in 0..<8 {
                let socket = try TestSocket.connect(port: relay.proxyPort, timeoutSeconds: 2)
                let started = Date()
                var descriptor = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
                if poll(&descriptor, 1, 1000) > 0, let response = try? ProxyClient.readResponse(socket) {
                    Expect.refusal(response, status: 503, reason: "out-of-descriptors")
                    if Date().timeIntervalSince(started) < 0.5 { refusedFast += 1 }
                } else {
                    held.append(socket)
                }
            }
            #expect(held.count == 2, "the two that fit are accepted and wait for their request")
            #expect(refusedFast == 6, "the rest are refused at once, not left in the backlog")
            // The log line and the refusal leave the relay together; the line reaches us through a pipe.
            #expect(eventually(seconds: 5) { relay.stderr.contains("out of file descriptors (RLIMIT_NOFILE") }, "\(relay.stderr)")
            // One summary row per refusal-summary interval: a loaded machine may spread the six
            // refusals over two intervals, so the rows' counts are added up.
            var refusedInRows = 0
            #expect(eventually(seconds: 10) {
                let rows = relay.audit.waitForEvents(where: "reason LIKE 'out-of-descriptors: %'")
                refusedInRows = rows.compactMap { row in
                    row["reason"].flatMap { Int($0.dropFirst("out-of-descriptors: ".count).prefix { $0.isNumber }) }
                }.reduce(0, +)
                return refusedInRows == 6
            }, "\(refusedInRows) refusals in the summary rows; audit:\n\(relay.audit.dump())")
            for socket in held { socket.close() }
            // Descriptors back: a new client is served again.
            #expect(eventually(seconds: 5) {
                guard let (response, _) = try? ProxyClient.exchange(relayPort: relay.proxyPort,
                                                                   "CONNECT 127.0.0.9:1 HTTP/1.1\r\nHost: 127.0.0.9:1\r\n\r\n")
                else { return false }
                return response.status == 403
            })
        }

        @Test("no descriptor left for the upstream: 503 out-of-descriptors, not 502 upstream-unreachable")
        func connectWithoutDescriptors() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(echo.port)"]))
            defer { relay.stop() }
            // One more descriptor: the client's socket, and none for its upstream.
            try limitDescriptors(of: relay.pid, to: descriptorLimit(of: relay.pid, leavingFree: 1))
            let (_, response) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "127.0.0.1:\(echo.port)")
            Expect.refusal(response, status: 503, reason: "out-of-descriptors")
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close'")
            #expect(close.first?["reason"] == "out-of-descriptors", "audit:\n\(relay.audit.dump())")
            #expect(eventually(seconds: 5) { relay.stderr.contains("out of file descriptors") }, "\(relay.stderr)")
        }

        @Test("max-connections beyond RLIMIT_NOFILE: check-config and the start both warn")
        func descriptorBudgetWarning() throws {
            let dir = try TempDirectory()
            let path = try dir.write("dynrelay.conf", "listen 127.0.0.1:0\nstate-dir \(dir.path)/state\nmax-connections 1000000\n")
            let check = try RelayBinary.run(["check-config", "--config", path])
            #expect(check.status == 0, "a warning, not an error")
            #expect(check.stderr.contains("warning: max-connections 1000000 needs about 2000"), "\(check.stderr)")
            #expect(check.stderr.contains("RLIMIT_NOFILE is"))
            let relay = try RelayProcess(config: RelayConfigText.proxy(["max-connections 1000000"]))
            #expect(relay.stderr.contains("warning: max-connections 1000000 needs about"), "\(relay.stderr)")
            relay.stop()
            let fits = try RelayProcess(config: RelayConfigText.proxy(["max-connections 1000"]))
            #expect(!fits.stderr.contains("warning"), "\(fits.stderr)")
            fits.stop()
        }
    }
}
