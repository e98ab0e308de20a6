import Foundation
import Glibc
import SQLiteTestSupport
import Testing

/// One hostile request head and the refusal the contract promises for it.
struct BadRequestCase: Sendable, CustomTestStringConvertible {
    var name: String
    /// `{ORIGIN}` becomes the registered origin's host:port.
    var request: String
    var status: Int
    var reason: String

    var testDescription: String { name }

    static let all: [BadRequestCase] = [
        BadRequestCase(name: "malformed request line", request: "GET /nothing-after-target\r\n\r\n",
                       status: 400, reason: "bad-request-line"),
        BadRequestCase(name: "head over 32 KiB",
                       request: "GET http://{ORIGIN}/ HTTP/1.1\r\nHost: {ORIGIN}\r\nX-Big: \(String(repeating: "a", count: 40 * 1024))\r\n\r\n",
                       status: 431, reason: "head-too-large"),
        BadRequestCase(name: "101 header fields",
                       request: "GET http://{ORIGIN}/ HTTP/1.1\r\nHost: {ORIGIN}\r\n" + (1...100).map { "X-H\($0): v\r\n" }.joined() + "\r\n",
                       status: 431, reason: "too-many-headers"),
        BadRequestCase(name: "Content-Length with Transfer-Encoding",
                       request: "POST http://{ORIGIN}/ HTTP/1.1\r\nHost: {ORIGIN}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                       status: 400, reason: "ambiguous-framing"),
        BadRequestCase(name: "duplicate Content-Length",
                       request: "POST http://{ORIGIN}/ HTTP/1.1\r\nHost: {ORIGIN}\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
                       status: 400, reason: "duplicate-content-length"),
        BadRequestCase(name: "obs-fold",
                       request: "GET http://{ORIGIN}/ HTTP/1.1\r\nHost: {ORIGIN}\r\nX-Folded: a\r\n b\r\n\r\n",
                       status: 400, reason: "obs-fold"),
        BadRequestCase(name: "bare LF",
                       request: "GET http://{ORIGIN}/ HTTP/1.1\nHost: {ORIGIN}\n\n",
                       status: 400, reason: "bare-line-ending"),
        BadRequestCase(name: "bare CR",
                       request: "GET http://{ORIGIN}/ HTTP/1.1\r\nHost: {ORIGIN}\rX-Smuggled: 1\r\n\r\n",
                       status: 400, reason: "bare-line-ending"),
        BadRequestCase(name: "HTTP/1.1 without Host",
                       request: "GET http://{ORIGIN}/ HTTP/1.1\r\nAccept: */*\r\n\r\n",
                       status: 400, reason: "missing-host"),
        BadRequestCase(name: "HTTP/1.1 CONNECT without Host",
                       request: "CONNECT {ORIGIN} HTTP/1.1\r\n\r\n",
                       status: 400, reason: "missing-host"),
        BadRequestCase(name: "Transfer-Encoding whose final coding is not chunked",
                       request: "POST http://{ORIGIN}/ HTTP/1.1\r\nHost: {ORIGIN}\r\nTransfer-Encoding: gzip\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                       status: 400, reason: "bad-transfer-encoding"),
        BadRequestCase(name: "Transfer-Encoding with a coding before chunked",
                       request: "POST http://{ORIGIN}/ HTTP/1.1\r\nHost: {ORIGIN}\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                       status: 501, reason: "unsupported-transfer-encoding"),
        BadRequestCase(name: "two Host fields",
                       request: "GET http://{ORIGIN}/ HTTP/1.1\r\nHost: {ORIGIN}\r\nHost: 127.0.0.1:1\r\n\r\n",
                       status: 400, reason: "bad-header"),
    ]
}

extension IntegrationSuite {
    /// Hostile input gets a clear answer and an audit row, and never affects a healthy
    /// tunnel that was open before it arrived.
    @Suite("bad input")
    struct BadInputTests {
        /// A relay with a registered origin and echo server, plus a tunnel to the echo
        /// opened before the test's bad input.
        struct Fixture {
            let origin: HTTPOrigin
            let echo: EchoServer
            let relay: RelayProcess
            let healthy: HealthyTunnel

            init(extraConfig: [String] = [], extraServers: [UInt16] = []) throws {
                origin = try HTTPOrigin()
                echo = try EchoServer()
                relay = try RelayProcess(config: RelayConfigText.proxy(
                    ["server 127.0.0.1:\(origin.port)", "server 127.0.0.1:\(echo.port)"]
                        + extraServers.map { "server 127.0.0.1:\($0)" } + extraConfig))
                healthy = try HealthyTunnel(relay: relay, echo: echo)
            }

            /// Closes the healthy tunnel first, so SIGTERM has nothing to drain.
            func stop() {
                healthy.socket.close()
                relay.stop()
            }
        }

        @Test("malformed heads are refused with their reason code", arguments: BadRequestCase.all)
        func malformedHead(_ bad: BadRequestCase) throws {
            let fixture = try Fixture()
            defer { fixture.stop() }
            let request = bad.request.replacingOccurrences(of: "{ORIGIN}", with: "127.0.0.1:\(fixture.origin.port)")
            let (response, socket) = try ProxyClient.exchange(relayPort: fixture.relay.proxyPort, request)
            Expect.refusal(response, status: bad.status, reason: bad.reason)
            #expect(ProxyClient.closes(socket), "the relay must close after a refusal")
            Expect.refusedRow(fixture.relay, reason: bad.reason, status: bad.status)
            #expect(fixture.origin.requests.isEmpty, "nothing may reach the origin")
            Expect.unaffected(fixture.relay, fixture.healthy)
        }

        /// The origin cannot answer a body it has not seen the end of, and the relay never
        /// forwards the bad chunk, so no response head can have gone out: the relay answers
        /// 400 itself (it could only reset a client whose response had started).
        @Test("invalid chunk size in a forwarded body: 400 bad-chunk, audited with that status")
        func invalidChunkSize() throws {
            let fixture = try Fixture()
            defer { fixture.stop() }
            let origin = "127.0.0.1:\(fixture.origin.port)"
            let socket = try TestSocket.connect(port: fixture.relay.proxyPort)
            try socket.write("POST http://\(origin)/upload HTTP/1.1\r\nHost: \(origin)\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\nhello\r\n0\r\n\r\n")
            let response = try ProxyClient.readResponse(socket)
            Expect.refusal(response, status: 400, reason: "bad-chunk")
            #expect(ProxyClient.closes(socket))
            let rows = fixture.relay.audit.waitForEvents(where: "reason = 'bad-chunk'")
            #expect(rows.count == 1, "audit:\n\(fixture.relay.audit.dump())")
            #expect(rows.first?["status"] == "400", "the row carries the status sent")
            #expect(!fixture.origin.requests.contains { $0.bodyError == nil && $0.bodyCount > 0 },
                    "the origin must not receive a complete body built from an invalid chunk")
            Expect.unaffected(fixture.relay, fixture.healthy)
        }

        /// A client that sent part of a head when the header timeout ends it is told why: 408
        /// with the reason code, then the close (RFC 9110 §15.5.9: the request did not arrive
        /// complete in time; haproxy answers a partial head the same way). One that sent
        /// nothing has no request to answer and gets a bare close, as haproxy's
        /// `option http-ignore-probes` does (`silentConnectionIsClosedWithoutAnAnswer`).
        @Test("slow-drip head: header-timeout answers 408 and is audited in its source's count")
        func slowDripHead() throws {
            let fixture = try Fixture(extraConfig: ["header-timeout 1s", "refusal-summary-interval 500ms"])
            defer { fixture.stop() }
            let origin = "127.0.0.1:\(fixture.origin.port)"
            let socket = try TestSocket.connect(port: fixture.relay.proxyPort)
            let started = Date()
            try socket.write("GET http://\(origin)/ HTTP/1.1\r\n")
            // A byte every 200 ms for at most 8 s: the timeout covers the whole head, so
            // trickling must not keep resetting it.
            var drip = 0
            while Date().timeIntervalSince(started) < 8 {
                var descriptor = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
                if poll(&descriptor, 1, 200) > 0 { break }
                drip += 1
                if (try? socket.write("X-Drip-\(drip): y\r\n")) == nil { break }
            }
            let elapsed = Date().timeIntervalSince(started)
            #expect(elapsed < 6, "no answer \(elapsed) s into a 1 s header timeout")
            let response = try ProxyClient.readResponse(socket)
            Expect.refusal(response, status: 408, reason: "header-timeout")
            #expect(ProxyClient.closes(socket))
            let rows = fixture.relay.audit.waitForEvents(where: "reason LIKE 'header-timeout: 1 connection between %'")
            #expect(rows.count == 1, "audit:\n\(fixture.relay.audit.dump())")
            #expect(rows.first?["client"] == "127.0.0.1", "counted by source, not by connection")
            #expect(rows.first?["status"] == "408")
            #expect(fixture.origin.requests.isEmpty)
            Expect.unaffected(fixture.relay, fixture.healthy)
        }

        /// An idle connection with no byte of a request has nothing to answer: the relay
        /// closes it without a byte, and counts it with no status.
        @Test("silent connection: header-timeout closes it without an answer, counted with no status")
        func silentConnectionIsClosedWithoutAnAnswer() throws {
            let fixture = try Fixture(extraConfig: ["header-timeout 1s", "refusal-summary-interval 500ms"])
            defer { fixture.stop() }
            let socket = try TestSocket.connect(port: fixture.relay.proxyPort)
            let started = Date()
            #expect(try socket.read() == [], "a FIN with no byte before it")
            let elapsed = Date().timeIntervalSince(started)
            #expect(elapsed > 0.5 && elapsed < 6, "closed \(elapsed) s into a 1 s header timeout")
            let rows = fixture.relay.audit.waitForEvents(where: "reason LIKE 'header-timeout: 1 connection between %'")
            #expect(rows.count == 1, "audit:\n\(fixture.relay.audit.dump())")
            #expect(rows.first?["status"] == nil, "nothing was sent, so no status is recorded")
            Expect.unaffected(fixture.relay, fixture.healthy)
        }

        @Test("refusing upstream: 502 upstream-refused, audited")
        func refusingUpstream() throws {
            let closedPort = try TestListener.refusedPort()
            let fixture = try Fixture(extraServers: [closedPort])
            defer { fixture.stop() }
            let target = "127.0.0.1:\(closedPort)"
            let (_, response) = try ProxyClient.connect(relayPort: fixture.relay.proxyPort, authority: target)
            Expect.refusal(response, status: 502, reason: "upstream-refused")
            Expect.failedOpenRows(fixture.relay, kind: "tunnel", reason: "upstream-refused", status: 502, target: target)
            let (forwarded, _) = try ProxyClient.exchange(relayPort: fixture.relay.proxyPort, "GET http://\(target)/ HTTP/1.1\r\nHost: \(target)\r\n\r\n")
            #expect(forwarded.status == 502, "absolute-form to a refusing upstream: \(forwarded.statusLine)")
            #expect(forwarded.bodyText == "upstream-refused\n")
            Expect.unaffected(fixture.relay, fixture.healthy)
        }

        /// A static forward has no status line: the refusal is a close before any byte, and
        /// the open row (written while the upstream connects) gets its close row with why.
        @Test("static forward to a refusing upstream: closed without a byte, open and close rows audited")
        func forwardToRefusingUpstream() throws {
            let closedPort = try TestListener.refusedPort()
            let fixture = try Fixture(extraConfig: ["forward 127.0.0.1:0 to 127.0.0.1:\(closedPort)"],
                                      extraServers: [closedPort])
            defer { fixture.stop() }
            let port = try #require(fixture.relay.listeners.last?.port)
            let socket = try TestSocket.connect(port: port)
            defer { socket.close() }
            #expect(ProxyClient.closes(socket), "the forward must close the client, not hold it")
            let target = "127.0.0.1:\(closedPort)"
            let closes = fixture.relay.audit.waitForEvents(where: "event = 'forward-close' AND target = ?", [target])
            #expect(closes.count == 1, "audit:\n\(fixture.relay.audit.dump())")
            #expect(closes.first?["reason"] == "upstream-refused")
            #expect(closes.first?["resolved"] == target)
            #expect(closes.first?["bytes_up"] == "0")
            Expect.unaffected(fixture.relay, fixture.healthy)
            // Settled (the healthy round trip came after): exactly one open and one close row.
            let session = closes.first?["session"] ?? ""
            let events = try fixture.relay.audit.events(where: "session = ?", [session]).map { $0["event"] ?? "" }
            #expect(events == ["forward-open", "forward-close"], "audit:\n\(fixture.relay.audit.dump())")
        }

        /// A client lost (here: idle-timed out) while its open row waits for a commit that then
        /// fails: the attempt is recorded as refused, and no close row is left without its
        /// open row. The commit is held back by another process's write lock, then refused by
        /// a trigger.
        @Test("client lost while its open row waits for a commit that fails: a refusal, no orphan close row")
        func clientLostBeforeAFailingCommit() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "server 127.0.0.1:\(echo.port)", "idle-timeout 500ms",
            ]))
            defer { relay.stop() }
            try relay.audit.refuseRows(ofEvent: "tunnel-open")
            let target = "127.0.0.1:\(echo.port)"
            let lock = try SQLiteWriteLock(path: relay.auditPath)
            let socket = try TestSocket.connect(port: relay.proxyPort)
            defer { socket.close() }
            try socket.write("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n")
            #expect(ProxyClient.closes(socket), "the idle sweep closes the waiting client")
            lock.release()
            #expect(relay.audit.waitForEvents(where: "event = 'refused' AND target = ?", [target]).count == 1,
                    "audit:\n\(relay.audit.dump())")
            // Rows commit in order and a failed batch's rows are retried ahead of newer ones,
            // 100 ms later: once a refusal sent after that is visible, a retried row would be too.
            usleep(300_000)
            _ = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "marker.example:443")
            #expect(relay.audit.waitForEvents(where: "target = 'marker.example:443'").count == 1)
            let rows = try relay.audit.events(where: "target = ?", [target])
            #expect(rows.map { $0["event"] ?? "" } == ["refused"], "a refusal, and no close row for the refused open row; audit:\n\(relay.audit.dump())")
            #expect(rows.first?["reason"] == "internal-error")
            #expect(relay.isAlive)
        }

        /// A forward still connecting when the drain deadline passes is aborted like a
        /// tunnel: its committed open row gets a close row with reason `shutdown` before the
        /// trail is closed.
        @Test("static forward still connecting at shutdown: its open row gets a shutdown close row")
        func forwardConnectingAtShutdown() throws {
            let blackhole = try BlackholeListener()
            let target = "127.0.0.1:\(blackhole.port)"
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "server \(target)", "forward 127.0.0.1:0 to \(target)", "connect-timeout 60s",
            ]))
            defer { relay.stop() }
            let socket = try TestSocket.connect(port: try #require(relay.listeners.last?.port))
            defer { socket.close() }
            let opens = relay.audit.waitForEvents(where: "event = 'forward-open' AND target = ?", [target])
            try #require(opens.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(relay.stop() == 0, "SIGTERM must drain, abort and exit 0; stderr:\n\(relay.stderr)")
            let rows = try relay.audit.events(where: "target = ?", [target])
            #expect(rows.map { $0["event"] ?? "" } == ["forward-open", "forward-close"], "audit:\n\(relay.audit.dump())")
            #expect(rows.last?["reason"] == "shutdown")
            #expect(ProxyClient.closes(socket), "the client is closed, not left hanging")
        }

        /// An open row the database refuses: nothing is relayed, the refusal is recorded as
        /// `internal-error`, and no close row refers to the missing open row, in each order of
        /// the commit's failure and the connect's outcome. Another process's write lock holds
        /// the commit back until the connect is done; a trigger then refuses the row.
        @Test("open row refused by the database: no byte relayed, no close row without its open row",
              arguments: OpenRowRefusal.allCases)
        func openRowRefusedByTheDatabase(_ order: OpenRowRefusal) throws {
            let echo = try EchoServer()
            let refusing = try TestListener.refusedPort()
            let blackhole = try BlackholeListener()
            let upstreamPort: UInt16
            switch order {
            case .connectFailsFirst: upstreamPort = refusing
            case .connectSucceedsFirst: upstreamPort = echo.port
            case .commitFailsWhileConnecting: upstreamPort = blackhole.port
            }
            let fixture = try Fixture(extraConfig: ["forward 127.0.0.1:0 to 127.0.0.1:\(upstreamPort)", "connect-timeout 30s"],
                                      extraServers: [upstreamPort])
            defer { fixture.stop() }
            try fixture.relay.audit.refuseRows(ofEvent: "forward-open")
            try fixture.relay.audit.refuseRows(ofEvent: "tunnel-open")
            let target = "127.0.0.1:\(upstreamPort)"
            let lock = order == .commitFailsWhileConnecting ? nil : try SQLiteWriteLock(path: fixture.relay.auditPath)

            let forwarded = try TestSocket.connect(port: try #require(fixture.relay.listeners.last?.port))
            defer { forwarded.close() }
            // A connect refused at once resets the forward's client, maybe before this write.
            _ = try? forwarded.write("ping")
            let tunnel = try TestSocket.connect(port: fixture.relay.proxyPort)
            defer { tunnel.close() }
            try tunnel.write("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n")
            if let lock {
                // Both connects finish (refused or established) behind the lock.
                switch order {
                case .connectFailsFirst:
                    #expect(ProxyClient.closes(forwarded), "a refused connect closes the client at once")
                    usleep(100_000)  // the CONNECT's connect is refused as fast; nothing shows it
                case .connectSucceedsFirst:
                    let deadline = Date().addingTimeInterval(10)
                    while echo.connections < 2 && Date() < deadline { usleep(10_000) }
                    #expect(echo.connections == 2, "both connects reached the upstream")
                case .commitFailsWhileConnecting:
                    break
                }
                lock.release()
            }
            #expect(ProxyClient.closes(forwarded), "nothing may be relayed without the open row")
            Expect.refusal(try ProxyClient.readResponse(tunnel), status: 500, reason: "internal-error")

            let refused = fixture.relay.audit.waitForEvents(where: "event = 'refused' AND reason = 'internal-error' AND target = ?",
                                                            [target], count: 2)
            #expect(refused.count == 2, "audit:\n\(fixture.relay.audit.dump())")
            Expect.unaffected(fixture.relay, fixture.healthy)
            let rows = try fixture.relay.audit.events(where: "target = ?", [target]).map { $0["event"] ?? "" }
            #expect(rows == ["refused", "refused"], "no open row and no close row; audit:\n\(fixture.relay.audit.dump())")
        }

        /// A forward whose connect was refused while its open row waited behind a lock, then
        /// SIGTERM: the drain finds no connection left, and the close row that waits for the
        /// commit still reaches the trail before it closes.
        @Test("shutdown while an ended forward's open row commits: its close row is not lost")
        func shutdownWhileAnEndedForwardCommits() throws {
            let refusing = try TestListener.refusedPort()
            let target = "127.0.0.1:\(refusing)"
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server \(target)", "forward 127.0.0.1:0 to \(target)"]))
            defer { relay.stop() }
            let lock = try SQLiteWriteLock(path: relay.auditPath)
            let socket = try TestSocket.connect(port: try #require(relay.listeners.last?.port))
            defer { socket.close() }
            #expect(ProxyClient.closes(socket), "a refused connect closes the client at once")
            let releaser = Thread {
                usleep(500_000)
                lock.release()
            }
            releaser.start()
            #expect(relay.stop() == 0, "stderr:\n\(relay.stderr)")
            let rows = try relay.audit.events(where: "target = ?", [target])
            #expect(rows.map { $0["event"] ?? "" } == ["forward-open", "forward-close"], "audit:\n\(relay.audit.dump())")
            #expect(rows.last?["reason"] == "upstream-refused")
        }

        /// A blackhole upstream: the relay's connect neither succeeds nor is refused, and only
        /// its timer ends it.
        @Test("upstream that never answers the handshake: 504 upstream-timeout, audited")
        func upstreamConnectTimeout() throws {
            let blackhole = try BlackholeListener()
            let fixture = try Fixture(extraConfig: ["connect-timeout 1s"], extraServers: [blackhole.port])
            defer { fixture.stop() }
            let target = "127.0.0.1:\(blackhole.port)"
            let started = Date()
            let (_, response) = try ProxyClient.connect(relayPort: fixture.relay.proxyPort, authority: target)
            Expect.refusal(response, status: 504, reason: "upstream-timeout")
            #expect(Date().timeIntervalSince(started) < 10, "connect-timeout 1s must end the attempt")
            Expect.failedOpenRows(fixture.relay, kind: "tunnel", reason: "upstream-timeout", status: 504, target: target)
            Expect.unaffected(fixture.relay, fixture.healthy)
        }

        @Test("upstream resets mid-tunnel: the client sees the end, a close row is audited")
        func upstreamResetMidTunnel() throws {
            let prefix = PatternBytes.make(count: 64 * 1024, seed: 9)
            let resetter = try ResetServer(prefix: prefix)
            let fixture = try Fixture(extraServers: [resetter.port])
            defer { fixture.stop() }
            let target = "127.0.0.1:\(resetter.port)"
            let socket = try ProxyClient.tunnel(relayPort: fixture.relay.proxyPort, authority: target)
            #expect(SHA256Hasher.hex(try socket.readExactly(prefix.count)) == SHA256Hasher.hex(prefix), "bytes before the reset are relayed")
            try socket.write("x")
            #expect(ProxyClient.closes(socket), "the client must see EOF or a reset, not silence")
            let close = fixture.relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", [target])
            #expect(close.count == 1, "audit:\n\(fixture.relay.audit.dump())")
            #expect(close.first?["reason"] == "upstream-reset")
            #expect(close.first?["bytes_down"] == String(prefix.count))
            Expect.unaffected(fixture.relay, fixture.healthy)
        }
    }
}

/// Which comes first when the database refuses a tunnel's open row.
enum OpenRowRefusal: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// The upstream refuses while the commit waits behind another process's lock.
    case connectFailsFirst
    /// The upstream accepts while the commit waits behind another process's lock.
    case connectSucceedsFirst
    /// The commit fails at once while the connect to a silent upstream is still pending.
    case commitFailsWhileConnecting

    var testDescription: String { rawValue }
}
