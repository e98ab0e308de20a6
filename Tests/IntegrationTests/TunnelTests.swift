import Foundation
import SQLiteTestSupport
import Testing

extension IntegrationSuite {
    /// Raw CONNECT tunnels (the GDSocket path) and static forwards, checked by SHA-256.
    @Suite("CONNECT tunnels and static forwards")
    struct TunnelTests {
        /// Streams `up` on a helper thread (then FIN) while the caller reads to EOF:
        /// both directions at once, as a full-duplex client does.
        static func exchange(_ socket: TestSocket, up: [UInt8]) throws -> (count: Int, sha256: String) {
            let writeError = LockedBox<Error?>(nil)
            let written = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                do { try socket.write(up) } catch { writeError.set(error) }
                socket.shutdownWrite()
                written.signal()
            }
            let hasher = SHA256Hasher()
            let count = try socket.drainToEOF(into: hasher)
            _ = written.wait(timeout: .now() + .seconds(TestSocket.defaultTimeoutSeconds))
            if let error = writeError.get() { throw error }
            return (count, hasher.finalHex())
        }

        /// Waits (bounded) for the upstream to finish reading a stream.
        static func waitForStream(_ server: DuplexServer, timeout: Double = 20) -> ReceivedStream? {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if let stream = server.streams.first { return stream }
                usleep(10_000)
            }
            return nil
        }

        @Test("8 MiB up and 8 MiB down at once, byte-exact, bytes audited")
        func fullDuplexByteExact() throws {
            let size = 8 << 20
            let down = PatternBytes.make(count: size, seed: 2)
            let up = PatternBytes.make(count: size, seed: 1)
            let server = try DuplexServer(downBeforeEOF: down)
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(server.port)"]))
            defer { relay.stop() }
            let socket = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "127.0.0.1:\(server.port)")
            let received = try Self.exchange(socket, up: up)
            #expect(received.count == size)
            #expect(received.sha256 == SHA256Hasher.hex(down), "downstream is not byte-exact")
            let stream = Self.waitForStream(server)
            #expect(stream == ReceivedStream(count: size, sha256: SHA256Hasher.hex(up), sawEOF: true), "upstream is not byte-exact")

            let target = "127.0.0.1:\(server.port)"
            let rule = relay.rule(containing: "server 127.0.0.1:\(server.port)")
            let open = relay.audit.waitForEvents(where: "event = 'tunnel-open' AND target = ?", [target])
            #expect(open.first?["rule"] == rule, "audit:\n\(relay.audit.dump())")
            #expect(open.first?["decision"] == "allow")
            #expect(open.first?["resolved"] == target)
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", [target])
            #expect(close.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(close.first?["bytes_up"] == String(size))
            #expect(close.first?["bytes_down"] == String(size))
            #expect(close.first?["rule"] == rule)
            #expect(close.first?["session"] == open.first?["session"])
            #expect(close.first?["duration_ms"] != nil)
        }

        @Test("half-close: after the client's FIN the upstream still sends 1 MiB, all of it arrives")
        func halfClose() throws {
            let after = PatternBytes.make(count: 1 << 20, seed: 4)
            let up = PatternBytes.make(count: 256 * 1024, seed: 5)
            let server = try DuplexServer(downBeforeEOF: [], downAfterEOF: after)
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(server.port)"]))
            defer { relay.stop() }
            let socket = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "127.0.0.1:\(server.port)")
            let received = try Self.exchange(socket, up: up)
            #expect(Self.waitForStream(server) == ReceivedStream(count: up.count, sha256: SHA256Hasher.hex(up), sawEOF: true),
                    "the upstream must see the client's FIN as EOF, after every byte")
            #expect(received.count == after.count, "bytes sent after the client's FIN must still arrive")
            #expect(received.sha256 == SHA256Hasher.hex(after))
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", ["127.0.0.1:\(server.port)"])
            #expect(close.first?["bytes_down"] == String(after.count), "audit:\n\(relay.audit.dump())")
            #expect(close.first?["bytes_up"] == String(up.count))
        }

        /// After its FIN a client's socket is watched for nothing but a reset: one that comes
        /// while the upstream stays quiet ends the tunnel at once, not at the idle timeout.
        @Test("a client that half-closes and then resets, with a quiet upstream: the tunnel ends at once, client-reset")
        func resetAfterHalfClose() throws {
            let server = try QuietAfterEOFServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(server.port)"]))
            defer { relay.stop() }
            let socket = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "127.0.0.1:\(server.port)")
            try socket.write("hello")
            socket.shutdownWrite()
            let deadline = Date().addingTimeInterval(10)
            while server.heldAfterEOF.isEmpty && Date() < deadline { usleep(10_000) }
            let upstreamSide = try #require(server.heldAfterEOF.first, "the client's FIN reached the upstream")
            socket.resetAndClose()
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", ["127.0.0.1:\(server.port)"],
                                                  timeout: 5)
            #expect(close.first?["reason"] == "client-reset", "audit:\n\(relay.audit.dump())")
            #expect(close.first?["bytes_up"] == "5")
            // The relay lets go of the upstream too, after reading and dropping what it still
            // sends for at most LingeringClose.deadline (2 s): then a write there meets a
            // closed socket.
            #expect(throws: (any Error).self, "the relay still holds the upstream connection") {
                for _ in 0..<200 {
                    try upstreamSide.write("x")
                    usleep(20_000)
                }
            }
        }

        /// A tunnel whose upstream sends a 256 KiB reply and closes without reading; once the
        /// reply and its FIN have reached the relay, `client` writes what makes the closed
        /// upstream answer with a reset. The client must then read the whole reply and a
        /// clean EOF, not a reset. (The reply must fit what the relay and the client's socket
        /// take before the client reads: a server's reset also drops what it had not sent
        /// yet, through a relay or not; the relay holds back at most a pipe's worth of unsent
        /// bytes per socket.)
        static func expectWholeReplyAfterUpstreamReset(seed: UInt64,
                                                       client: (TestSocket, RelayProcess, UInt16) throws -> Void,
                                                       afterwards: (RelayProcess, UInt16) -> Void = { _, _ in }) throws {
            let reply = PatternBytes.make(count: 256 << 10, seed: seed)
            let server = try ReplyThenCloseServer(reply: reply)
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(server.port)"]))
            defer { relay.stop() }
            let socket = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "127.0.0.1:\(server.port)")
            usleep(200_000)  // the reply and the upstream's FIN reach the relay and are passed on
            try client(socket, relay, server.port)
            let hasher = SHA256Hasher()
            var received = -1
            #expect(throws: Never.self, "the client got a reset, not the end of the reply") {
                received = try socket.drainToEOF(into: hasher)
            }
            #expect(received == reply.count)
            #expect(hasher.finalHex() == SHA256Hasher.hex(reply))
            afterwards(relay, server.port)
        }

        /// The other way round: the upstream replied and closed, and the client's late write
        /// made it answer with a reset. Its reply was handed on whole, so the client gets it
        /// and an orderly end, not a reset.
        @Test("an upstream that replied, closed, then reset a late client write: the client still gets the reply and a clean EOF")
        func upstreamResetAfterItsReply() throws {
            try Self.expectWholeReplyAfterUpstreamReset(seed: 9, client: { socket, _, _ in
                try socket.write("late")
            }, afterwards: { relay, port in
                // The tunnel ends once the reply is delivered; its close row follows.
                let close = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", ["127.0.0.1:\(port)"])
                #expect(close.count == 1, "audit:\n\(relay.audit.dump())")
            })
        }

        /// As above, with the client still uploading when the upstream's reset comes: the
        /// relay reads and drops the rest of the upload until the client's FIN instead of
        /// closing with unread bytes, which Linux would turn into a reset that throws away
        /// the end of the reply.
        @Test("an upstream that replied and closed while the client kept uploading: the client still gets the whole reply")
        func upstreamResetWhileTheClientUploads() throws {
            try Self.expectWholeReplyAfterUpstreamReset(seed: 10) { socket, _, _ in
                let chunk = PatternBytes.make(count: 16 * 1024, seed: 11)
                let stop = Date().addingTimeInterval(0.3)
                while Date() < stop, (try? socket.write(chunk)) != nil { usleep(5_000) }
                socket.shutdownWrite()
            }
        }

        /// A client left lingering (the upstream replied, closed, and reset a late write; the
        /// relay reads the client to its FIN instead of resetting it) still holds its place
        /// under `max-connections` until its socket is closed, and is let go when it closes.
        @Test("a lingering client socket counts under max-connections until it is closed")
        func lingeringSocketCountsAsAConnection() throws {
            let reply = Array("short reply".utf8)
            let server = try ReplyThenCloseServer(reply: reply)
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(server.port)", "max-connections 1"]))
            defer { relay.stop() }
            let target = "127.0.0.1:\(server.port)"
            let socket = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: target)
            defer { socket.close() }
            #expect(try socket.readExactly(reply.count) == reply)
            #expect(try socket.read().isEmpty, "the upstream's FIN is passed on after its reply")
            let wrote = Date()
            try socket.write("late")  // the closed upstream answers with a reset: the client lingers
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", [target])
            #expect(close.count == 1, "audit:\n\(relay.audit.dump())")

            let (_, during) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "unregistered.example:443")
            // The linger lasts 2 s at most: a machine stalled for longer has ended it already.
            if Date().timeIntervalSince(wrote) < 1.5 {
                Expect.refusal(during, status: 503, reason: "overloaded")
            }

            socket.shutdownWrite()  // the client's FIN ends the linger
            var admitted = false
            let deadline = Date().addingTimeInterval(5)
            while !admitted && Date() < deadline {
                let (probe, response) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "unregistered.example:443")
                probe.close()
                if response.status == 403 { admitted = true } else { usleep(20_000) }
            }
            #expect(admitted, "the place was not given back after the lingering socket closed")

            // Tunnels that end without lingering give their place back as they close.
            for _ in 0..<3 {
                var tunnel: TestSocket?
                let deadline = Date().addingTimeInterval(5)
                while tunnel == nil && Date() < deadline {
                    let (candidate, response) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: target)
                    if response.status == 200 { tunnel = candidate } else { candidate.close(); usleep(20_000) }
                }
                let open = try #require(tunnel, "a closed tunnel kept its place under max-connections 1")
                #expect(try open.readToEOF() == reply)
                open.close()
            }
        }

        @Test("the tunnel-open row is committed before the first payload byte")
        func openRowBeforeFirstByte() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(echo.port)"]))
            defer { relay.stop() }
            let socket = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "127.0.0.1:\(echo.port)")
            // No polling: the 200 is the relay's promise that the row is already durable.
            let rows = try relay.audit.events(where: "event = 'tunnel-open' AND target = ?", ["127.0.0.1:\(echo.port)"])
            #expect(rows.count == 1, "tunnel-open must be visible to another reader as soon as 200 arrives; audit:\n\(relay.audit.dump())")
            try socket.write("ping")
            #expect(try socket.readExactly(4) == Array("ping".utf8))
        }

        /// The open row is written while the upstream connects; the relay must still wait for
        /// its commit. Another process holding the trail's write lock keeps that commit (and
        /// so every byte) back until it lets go.
        @Test("the forward-open row is committed before the first payload byte")
        func forwardOpenRowBeforeFirstByte() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "server 127.0.0.1:\(echo.port)", "forward 127.0.0.1:0 to 127.0.0.1:\(echo.port)",
            ]))
            defer { relay.stop() }
            let port = try #require(relay.listeners.last?.port)
            let lock = try SQLiteWriteLock(path: relay.auditPath)
            let socket = try TestSocket.connect(port: port)
            defer { socket.close() }
            try socket.write("ping")
            socket.setTimeout(seconds: 1)
            #expect(throws: (any Error).self, "an echo arrived before the open row could commit") {
                try socket.read()
            }
            lock.release()
            socket.setTimeout(seconds: TestSocket.defaultTimeoutSeconds)
            #expect(try socket.readExactly(4) == Array("ping".utf8))
            // No polling: an echoed byte is the relay's promise that the open row is durable.
            let rows = try relay.audit.events(where: "event = 'forward-open' AND target = ?", ["127.0.0.1:\(echo.port)"])
            #expect(rows.count == 1, "audit:\n\(relay.audit.dump())")
        }

        @Test("forward LISTEN to HOST:PORT: byte-exact plain TCP relay, forward-open/close audited")
        func staticForward() throws {
            let size = 4 << 20
            let down = PatternBytes.make(count: size, seed: 6)
            let up = PatternBytes.make(count: size, seed: 7)
            let server = try DuplexServer(downBeforeEOF: down)
            let config = """
            # forward-only config: the forward listener is the only one
            state-dir {STATE}
            drain-timeout 2s
            server 127.0.0.1:\(server.port)
            forward 127.0.0.1:0 to 127.0.0.1:\(server.port)

            """
            let relay = try RelayProcess(config: config)
            defer { relay.stop() }
            let port = try #require(relay.listeners.last?.port)
            let socket = try TestSocket.connect(port: port)
            let received = try Self.exchange(socket, up: up)
            #expect(received.count == size)
            #expect(received.sha256 == SHA256Hasher.hex(down))
            #expect(Self.waitForStream(server) == ReceivedStream(count: size, sha256: SHA256Hasher.hex(up), sawEOF: true))

            let target = "127.0.0.1:\(server.port)"
            let rules = [relay.rule(containing: "server 127.0.0.1"), relay.rule(containing: "forward 127.0.0.1")]
            let open = relay.audit.waitForEvents(where: "event = 'forward-open' AND target = ?", [target])
            #expect(open.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(rules.contains(open.first?["rule"] ?? ""), "rule names the server or forward line")
            let close = relay.audit.waitForEvents(where: "event = 'forward-close' AND target = ?", [target])
            #expect(close.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(close.first?["bytes_up"] == String(size))
            #expect(close.first?["bytes_down"] == String(size))
        }
    }
}

extension IntegrationSuite.TunnelTests {
    /// A forward reads its client at once when the relay starts (the client usually spoke
    /// while the upstream connected). A protocol where the server speaks first finds nothing
    /// there: the greeting still reaches the silent client, and the client's reply and FIN
    /// still reach the server.
    @Test("static forward, server speaks first: greeting to a silent client, then the reply and FIN")
    func forwardServerSpeaksFirst() throws {
        let greeting = Array("220 relay test greeting\r\n".utf8)
        let server = try DuplexServer(downBeforeEOF: greeting)
        let relay = try RelayProcess(config: RelayConfigText.proxy([
            "server 127.0.0.1:\(server.port)", "forward 127.0.0.1:0 to 127.0.0.1:\(server.port)",
        ]))
        defer { relay.stop() }
        let socket = try TestSocket.connect(port: try #require(relay.listeners.last?.port))
        defer { socket.close() }
        #expect(try socket.readExactly(greeting.count) == greeting)
        let reply = PatternBytes.make(count: 100_000, seed: 11)
        try socket.write(reply)
        socket.shutdownWrite()
        #expect(try socket.readToEOF().isEmpty, "nothing but the greeting comes down")
        #expect(Self.waitForStream(server) == ReceivedStream(count: reply.count, sha256: SHA256Hasher.hex(reply), sawEOF: true))
    }


    /// A CONNECT pipelined behind a keep-alive response that a slow client has not read yet:
    /// the rest of that response, then the 200, then the tunnel, in order. (This once hit a
    /// precondition: a client could crash the relay by reading slowly.)
    @Test("CONNECT pipelined behind an unread response: response, 200, tunnel, in order")
    func connectPipelinedBehindAnUnreadResponse() throws {
        let origin = try HTTPOrigin()
        let echo = try EchoServer()
        let relay = try RelayProcess(config: RelayConfigText.proxy([
            "server 127.0.0.1:\(origin.port)", "server 127.0.0.1:\(echo.port)",
        ]))
        defer { relay.stop() }
        let size = 2 << 20
        let socket = try TestSocket.connect(port: relay.proxyPort)
        defer { socket.close() }
        try socket.write("GET http://127.0.0.1:\(origin.port)/bytes/\(size) HTTP/1.1\r\nHost: x\r\n\r\n"
                         + "CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = String(decoding: try #require(try socket.readHead()), as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(head)")
        // Read slowly, so the relay still has response bytes queued when the CONNECT is ready.
        var body: [UInt8] = []
        while body.count < size {
            body += try socket.readExactly(min(4096, size - body.count))
            usleep(500)
        }
        #expect(body == PatternBytes.make(count: size, seed: HTTPOrigin.responseSeed), "response not byte-exact")
        let established = String(decoding: try #require(try socket.readHead()), as: UTF8.self)
        #expect(established == "HTTP/1.1 200 Connection established\r\n\r\n")
        try socket.write("ping through the tunnel")
        #expect(String(decoding: try socket.readExactly(23), as: UTF8.self) == "ping through the tunnel")
        #expect(relay.isAlive, "stderr:\n\(relay.stderr)")
    }
}
