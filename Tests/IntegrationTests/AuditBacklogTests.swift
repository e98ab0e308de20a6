import CSQLite
import Foundation
import SQLiteTestSupport
import Testing

extension IntegrationSuite {
    @Suite("audit backlog")
    struct AuditBacklogTests {
        /// While `audit-backlog` rows wait for a commit, new connections get `503
        /// audit-backlog` and are counted rather than queued; once the queue drains, the
        /// next admitted connection records the count in one row. An open tunnel is unaffected.
        @Test("a full audit queue refuses new connections, counts them, and records the count after it drains")
        func fullQueueRefusesAndCounts() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(echo.port)", "audit-backlog 10"]))
            defer { relay.stop() }
            let healthy = try HealthyTunnel(relay: relay, echo: echo)
            defer { healthy.socket.close() }

            let lock = try SQLiteWriteLock(path: relay.auditPath)
            var refusedForBacklog = 0
            var refusedForRule = 0
            // Each refusal of an unregistered target queues one row that cannot commit now.
            for _ in 0..<40 {
                let (socket, response) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "unregistered.example:443")
                socket.close()
                if response.status == 503 {
                    Expect.refusal(response, status: 503, reason: "audit-backlog")
                    refusedForBacklog += 1
                } else {
                    #expect(response.status == 403, "got \(response.statusLine)")
                    refusedForRule += 1
                }
            }
            #expect(refusedForRule <= 12, "the queue grew past its bound: \(refusedForRule) rows queued")
            #expect(refusedForBacklog >= 28)
            try healthy.roundTrip(count: 4096)
            lock.release()

            // The queue drains; the first connection admitted afterwards records the count.
            var admitted = false
            let deadline = Date().addingTimeInterval(10)
            while !admitted && Date() < deadline {
                let (socket, response) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "unregistered.example:443")
                socket.close()
                if response.status == 403 { admitted = true } else { refusedForBacklog += 1; usleep(20_000) }
            }
            #expect(admitted, "the relay never admitted a connection after the lock was released")
            let rows = relay.audit.waitForEvents(where: "event = 'refused' AND reason LIKE 'audit-backlog:%'")
            #expect(rows.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(rows.first?["reason"] == "audit-backlog: \(refusedForBacklog) connections refused while the audit queue was full")
            #expect(rows.first?["status"] == "503")
            #expect(rows.first?["client"] == "*")
            let ruleRows = relay.audit.waitForEvents(where: "reason = 'not-registered'", count: refusedForRule + 1)
            #expect(ruleRows.count == refusedForRule + 1, "every admitted refusal keeps its own row")
            Expect.unaffected(relay, healthy)
            let verify = try RelayBinary.run(["audit", "verify", "--db", relay.auditPath])
            #expect(verify.status == 0, "stderr: \(verify.stderr)")
        }

        /// A row that can never be stored (here a trigger someone added refuses it) is given
        /// up after its attempts, alone, and the log says so; the rows around it are stored.
        @Test("a row the database refuses for good is given up alone and logged")
        func aRefusedRowIsGivenUpAndLogged() throws {
            let relay = try RelayProcess(config: RelayConfigText.proxy([]))
            defer { relay.stop() }
            _ = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "before.example:443")
            _ = relay.audit.waitForEvents(where: "target = 'before.example:443'")
            var db: OpaquePointer?
            try #require(sqlite3_open_v2(relay.auditPath, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK)
            sqlite3_busy_timeout(db, 5000)
            let created = sqlite3_exec(db, """
                CREATE TRIGGER refuse_poison BEFORE INSERT ON audit_events WHEN NEW.target = 'poison.example:443'
                BEGIN SELECT RAISE(ABORT, 'poison refused'); END
                """, nil, nil, nil)
            sqlite3_close_v2(db)
            try #require(created == SQLITE_OK)
            for host in ["poison.example", "after.example"] {
                let (socket, response) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "\(host):443")
                socket.close()
                Expect.refusal(response, status: 403, reason: "not-registered")
            }
            #expect(relay.audit.waitForEvents(where: "target = 'after.example:443'").count == 1,
                    "audit:\n\(relay.audit.dump())")
            let deadline = Date().addingTimeInterval(10)
            while !relay.stderr.contains("audit: 1 rows could not be stored") && Date() < deadline { usleep(50_000) }
            #expect(relay.stderr.contains("audit: 1 rows could not be stored after 3 attempts"), "stderr:\n\(relay.stderr)")
            #expect(try relay.audit.query("SELECT seq FROM audit_events WHERE target = 'poison.example:443'").isEmpty)
            #expect(relay.isAlive)
        }
    }
}
