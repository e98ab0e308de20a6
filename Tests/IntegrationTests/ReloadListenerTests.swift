import Foundation
import Glibc
import Testing

/// Sends a greeting on accept, then echoes: tells which upstream a forward reached.
final class GreetingServer: UpstreamServer, @unchecked Sendable {
    let greeting: [UInt8]

    init(_ greeting: String) throws {
        self.greeting = Array(greeting.utf8)
        try super.init()
        start()
    }

    override func handle(_ socket: TestSocket, connection: Int) {
        guard (try? socket.write(greeting)) != nil else { return }
        while let chunk = try? socket.read(), !chunk.isEmpty {
            if (try? socket.write(chunk)) == nil { break }
        }
        socket.shutdownWrite()
    }
}

extension IntegrationSuite {
    /// SIGHUP brings the listeners in line with the config: never a port the config no
    /// longer names, new ports bound, forwards retargeted, accepted connections untouched.
    @Suite("reload: listeners and forwards")
    struct ReloadListenerTests {
        /// The listeners the last `reloaded … listeners=` line names.
        static func reloadedListeners(_ relay: RelayProcess, reloads: Int) throws -> [AnnouncedListener] {
            #expect(ReloadTests.waitForLog(relay, "dynrelay: reloaded", count: reloads), "stderr:\n\(relay.stderr)")
            let line = try #require(relay.stderr.components(separatedBy: "\n").last { $0.contains("dynrelay: reloaded") })
            let list = try #require(line.components(separatedBy: "listeners=").last)
            return try RelayProcess.parseListeners(list)
        }

        static func reload(_ relay: RelayProcess, _ config: String) throws {
            try config.write(toFile: relay.configPath, atomically: true, encoding: .utf8)
            kill(relay.pid, SIGHUP)
        }

        static func greeting(port: UInt16) throws -> String {
            let socket = try TestSocket.connect(port: port)
            defer { socket.close() }
            return String(decoding: try socket.readExactly(1), as: UTF8.self)
        }

        @Test("a removed forward's port is closed, a retargeted forward reaches its new target, a new listen port is bound")
        func listenersFollowTheConfig() throws {
            let a = try GreetingServer("A")
            let b = try GreetingServer("B")
            let base = "listen 127.0.0.1:0\nstate-dir {STATE}\nserver 127.0.0.1:\(a.port)\nserver 127.0.0.1:\(b.port)\n"
            let relay = try RelayProcess(config: base
                + "forward 127.0.0.1:0 to 127.0.0.1:\(a.port)\nforward 127.0.0.2:0 to 127.0.0.1:\(a.port)\n")
            defer { relay.stop() }
            let (kept, removed) = (relay.forwardPorts[0], relay.forwardPorts[1])
            #expect(try Self.greeting(port: kept) == "A")
            // An accepted connection on the forward about to be removed.
            let established = try TestSocket.connect(port: removed, host: "127.0.0.2")
            #expect(try established.readExactly(1) == Array("A".utf8))

            let next = relay.configText.replacingOccurrences(of: "forward 127.0.0.2:0 to 127.0.0.1:\(a.port)\n", with: "")
                .replacingOccurrences(of: "forward 127.0.0.1:0 to 127.0.0.1:\(a.port)", with: "forward 127.0.0.1:0 to 127.0.0.1:\(b.port)")
                + "listen 127.0.0.3:0\n"
            try Self.reload(relay, next)
            let listeners = try Self.reloadedListeners(relay, reloads: 1)
            #expect(listeners.filter(\.isForward).map(\.port) == [kept], "the kept forward keeps its socket")
            #expect(listeners.filter { !$0.isForward }.count == 2)
            #expect(relay.stderr.contains("listener closed forward:127.0.0.2:\(removed)"), "\(relay.stderr)")
            #expect(relay.stderr.contains("now forwards to 127.0.0.1:\(b.port) (was 127.0.0.1:\(a.port))"))

            #expect(throws: SocketError.self, "a port the config no longer names is closed") {
                _ = try TestSocket.connect(port: removed, host: "127.0.0.2")
            }
            #expect(try Self.greeting(port: kept) == "B", "the next connection goes to the new target")
            try established.write("still")
            #expect(try established.readExactly(5) == Array("still".utf8), "what was accepted goes on")
            let added = try #require(listeners.first { $0.address == "127.0.0.3" })
            let socket = try TestSocket.connect(port: added.port, host: "127.0.0.3")
            try socket.write("CONNECT 127.0.0.1:\(b.port) HTTP/1.1\r\nHost: 127.0.0.1:\(b.port)\r\n\r\n")
            #expect(try ProxyClient.readResponse(socket, bodyless: true).status == 200, "the new listen port serves")
            let rows = try relay.audit.events(where: "event = 'forward-open' AND listener = ?", ["127.0.0.2:\(removed)"])
            #expect(rows.count == 1, "nothing relayed on the removed port after the reload")
        }

        @Test("a reload that moves state-dir is refused: the trail and its lock stay until a restart")
        func stateDirectoryCannotMove() throws {
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:1"]))
            defer { relay.stop() }
            try Self.reload(relay, relay.configText.replacingOccurrences(of: "state-dir \(relay.stateDir)",
                                                                         with: "state-dir \(relay.directory.path)/moved"))
            #expect(ReloadTests.waitForLog(relay, "reload refused", count: 1), "stderr:\n\(relay.stderr)")
            #expect(relay.stderr.contains("state-dir changes from \(relay.stateDir)"), "\(relay.stderr)")
            #expect(access(relay.directory.path + "/moved", F_OK) != 0, "nothing was made at the new place")
            #expect(try ReloadTests.status(relay, "127.0.0.9:1") == 403)
        }

        @Test("a listener that cannot be bound refuses the whole reload; nothing changes")
        func unbindableListenerRefusesTheReload() throws {
            let a = try GreetingServer("A")
            let b = try GreetingServer("B")
            let taken = try TestListener()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "server 127.0.0.1:\(a.port)", "server 127.0.0.1:\(b.port)", "forward 127.0.0.1:0 to 127.0.0.1:\(a.port)",
            ]))
            defer { relay.stop() }
            let forward = relay.forwardPorts[0]
            let next = relay.configText.replacingOccurrences(of: "to 127.0.0.1:\(a.port)", with: "to 127.0.0.1:\(b.port)")
                + "listen 127.0.0.1:\(taken.port)\ndeny 127.0.0.1:\(a.port)\n"
            try Self.reload(relay, next)
            #expect(ReloadTests.waitForLog(relay, "reload refused", count: 1), "stderr:\n\(relay.stderr)")
            #expect(relay.stderr.contains("127.0.0.1:\(taken.port)"), "the refusal names the address")
            #expect(try Self.greeting(port: forward) == "A", "the forward keeps its target")
            #expect(try ReloadTests.status(relay, "127.0.0.1:\(a.port)") == 200, "the refused file's deny is not in force")
        }
    }
}
