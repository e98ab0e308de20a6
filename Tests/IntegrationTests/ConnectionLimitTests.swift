import Foundation
import Glibc
import Testing

extension IntegrationSuite {
    /// One source cannot take every other client's place, and refusals that come before any
    /// request cost the trail a row per source and interval, not a row per connection.
    @Suite("per-source limits and counted refusals")
    struct ConnectionLimitTests {
        @Test("max-connections-per-source: the source's next connection gets 429, another source is served, one row counts it")
        func perSourceLimit() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "server 127.0.0.1:\(echo.port)", "max-connections-per-source 3", "refusal-summary-interval 500ms",
            ]))
            defer { relay.stop() }
            let silent = try (0..<3).map { _ in try TestSocket.connect(port: relay.proxyPort) }
            // Each silent socket is accepted before the next one connects.
            usleep(100_000)
            for _ in 0..<2 {
                let (response, socket) = try ProxyClient.exchange(relayPort: relay.proxyPort, "GET / HTTP/1.1\r\n\r\n")
                Expect.refusal(response, status: 429, reason: "source-limit")
                #expect(ProxyClient.closes(socket))
            }
            let other = try TestSocket.connect(port: relay.proxyPort, from: "127.0.0.2")
            let target = "127.0.0.1:\(echo.port)"
            try other.write("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n")
            #expect(try ProxyClient.readResponse(other, bodyless: true).status == 200, "another source is not held back")
            try other.write("ping")
            #expect(try other.readExactly(4) == Array("ping".utf8))

            let rows = relay.audit.waitForEvents(where: "reason LIKE 'source-limit:%'")
            #expect(rows.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(rows.first?["reason"]?.hasPrefix("source-limit: 2 connections between ") == true)
            #expect(rows.first?["client"] == "127.0.0.1")
            #expect(rows.first?["status"] == "429")
            // A closed connection gives its place back.
            silent[0].close()
            let deadline = Date().addingTimeInterval(5)
            var admitted = false
            while !admitted && Date() < deadline {
                let (response, _) = try ProxyClient.exchange(relayPort: relay.proxyPort, "CONNECT 127.0.0.3:1 HTTP/1.1\r\nHost: 127.0.0.3:1\r\n\r\n")
                admitted = response.status == 403
                if !admitted { usleep(20_000) }
            }
            #expect(admitted)
        }

        @Test("200 slowloris connections from one source: counted in one row per interval, not 200 rows")
        func slowlorisIsCounted() throws {
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "server 127.0.0.1:1", "header-timeout 1s", "refusal-summary-interval 1s",
            ]))
            defer { relay.stop() }
            var sockets: [TestSocket] = []
            for index in 0..<200 {
                let socket = try TestSocket.connect(port: relay.proxyPort)
                try socket.write(index % 2 == 0 ? "GET http://127.0.0.1:1/ HTTP/1.1\r\nX-Slow: " : "")
                sockets.append(socket)
            }
            for (index, socket) in sockets.enumerated() {
                if index % 2 == 0 {
                    // Part of a head: told why before the close (BadInputTests.slowDripHead).
                    let response = try ProxyClient.readResponse(socket)
                    Expect.refusal(response, status: 408, reason: "header-timeout")
                    #expect(ProxyClient.closes(socket), "connection \(index)")
                } else {
                    #expect(ProxyClient.closes(socket), "connection \(index) sent nothing and gets no byte")
                }
            }
            let rows = relay.audit.waitForEvents(where: "reason LIKE 'header-timeout:%'", count: 1)
            #expect(!rows.isEmpty)
            // Every connection is counted once, in at most a few interval rows.
            let deadline = Date().addingTimeInterval(5)
            var counted = 0
            var all: [AuditRow] = []
            repeat {
                all = (try? relay.audit.events(where: "reason LIKE 'header-timeout:%'")) ?? []
                counted = all.compactMap { row in
                    row["reason"].flatMap { Int($0.split(separator: " ")[1]) }
                }.reduce(0, +)
                if counted < 200 { usleep(100_000) }
            } while counted < 200 && Date() < deadline
            #expect(counted == 200, "audit:\n\(relay.audit.dump())")
            #expect(all.count <= 6, "rows per source and interval, not per connection: \(all.count)")
            #expect(all.allSatisfy { $0["client"] == "127.0.0.1" && $0["event"] == "refused" })
            #expect(try relay.audit.events(where: "reason = 'header-timeout'").isEmpty, "no row of its own per connection")
        }
    }
}
