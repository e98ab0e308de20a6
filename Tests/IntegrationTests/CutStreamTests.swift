import Foundation
import Glibc
import Testing

/// Reads one request head, sends `reply`, then ends the connection in order (FIN, held
/// until the peer closes) or with a reset: an origin that cuts its own response.
final class CuttingOrigin: UpstreamServer, @unchecked Sendable {
    enum Ending { case fin, reset }
    let reply: [UInt8]
    let ending: Ending

    init(reply: String, ending: Ending) throws {
        self.reply = Array(reply.utf8)
        self.ending = ending
        try super.init()
        start()
    }

    override func handle(_ socket: TestSocket, connection: Int) {
        guard (try? socket.readHead()) != nil else { return }
        _ = try? socket.write(reply)
        switch ending {
        case .reset:
            socket.resetAndClose()
        case .fin:
            socket.shutdownWrite()
            _ = try? socket.read()
        }
    }
}

/// What the client's last read saw once the bytes stopped.
enum StreamEnd: Equatable {
    case eof
    case reset
    case other(Int32)

    /// Reads `socket` until it ends (bounded by its timeout).
    static func read(_ socket: TestSocket) -> StreamEnd {
        do {
            while try !socket.read().isEmpty {}
            return .eof
        } catch let error as SocketError {
            return error.isReset ? .reset : .other(error.code)
        } catch {
            return .other(-1)
        }
    }
}

extension IntegrationSuite {
    /// A stream the relay cannot finish ends in a reset: a client never takes a cut for the end.
    @Suite("cut streams end in a reset")
    struct CutStreamTests {
        @Test("an origin resetting a body delimited by close: curl fails through the relay, as it does direct",
              arguments: [false, true])
        func closeDelimitedBodyReset(throughTunnel: Bool) throws {
            let origin = try CuttingOrigin(reply: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npart of a body", ending: .reset)
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(origin.port)"]))
            defer { relay.stop() }
            let url = "http://127.0.0.1:\(origin.port)/"
            let direct = try Curl.run(["-o", "/dev/null", url])
            #expect(direct.status != 0, "the origin must cut its answer: \(direct.stderr)")
            let relayed = try Curl.run((throughTunnel ? ["-p"] : []) + ["-x", "http://127.0.0.1:\(relay.proxyPort)", "-o", "/dev/null", url])
            #expect(relayed.status != 0, "through the relay a cut body must fail too, not exit 0: \(relayed.stderr)")
            if !throughTunnel {
                let close = relay.audit.waitForEvents(where: "event = 'request-close'")
                #expect(close.first?["reason"] == "upstream-reset", "audit:\n\(relay.audit.dump())")
                #expect(close.first?["status"] == "200")
            }
        }

        @Test("a Content-Length body cut short by the origin's FIN: the client gets a reset, not a FIN")
        func contentLengthCutShort() throws {
            let origin = try CuttingOrigin(reply: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", ending: .fin)
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(origin.port)"]))
            defer { relay.stop() }
            let socket = try TestSocket.connect(port: relay.proxyPort)
            try socket.write("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n")
            let head = try #require(try socket.readHead())
            #expect(String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
            #expect(StreamEnd.read(socket) == .reset)
            let close = relay.audit.waitForEvents(where: "event = 'request-close'")
            #expect(close.first?["reason"] == "upstream-closed", "audit:\n\(relay.audit.dump())")
        }

        @Test("SIGTERM's drain deadline resets open tunnels and forwards, and their close rows say shutdown")
        func drainDeadlineResets() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: """
                listen 127.0.0.1:0
                forward 127.0.0.1:0 to 127.0.0.1:\(echo.port)
                state-dir {STATE}
                drain-timeout 500ms
                server 127.0.0.1:\(echo.port)
                """)
            defer { relay.stop() }
            let (tunnel, forwarded) = try ProxyClient.relayingTunnelAndForward(relay, echoPort: echo.port)
            kill(relay.pid, SIGTERM)
            #expect(StreamEnd.read(tunnel) == .reset)
            #expect(StreamEnd.read(forwarded) == .reset)
            #expect(relay.stop() == 0)
            let closes = try relay.audit.events(where: "event IN ('tunnel-close', 'forward-close')")
            #expect(closes.count == 2)
            #expect(closes.allSatisfy { $0["reason"] == "shutdown" }, "audit:\n\(relay.audit.dump())")
        }

        @Test("a forward the rules refuse is reset: a raw TCP client cannot take it for an empty stream")
        func refusedForwardResets() throws {
            let echo = try EchoServer()
            // `localhost` resolves into loopback, which the address guard refuses.
            let relay = try RelayProcess(config: """
                listen 127.0.0.1:0
                forward 127.0.0.1:0 to localhost:\(echo.port)
                state-dir {STATE}
                server localhost:\(echo.port)
                """)
            defer { relay.stop() }
            let socket = try TestSocket.connect(port: relay.forwardPorts[0])
            #expect(StreamEnd.read(socket) == .reset)
            Expect.refusedRow(relay, reason: "guarded-address")
        }
    }
}
