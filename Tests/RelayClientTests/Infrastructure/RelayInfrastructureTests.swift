import Glibc
@testable import RelayClient
import RelayCore
import Synchronization
import Testing

/// `RelayInfrastructure` against a scripted relay: the `407` legs of a request to the relay's
/// own endpoints, and which connection each leg goes on.
@Suite struct RelayInfrastructureTests {
    typealias Scripted = RelayTunnelScriptedTests
    typealias BadRelay = RelayTunnelBadRelayTests

    static let config = #"{"principal":"alice","servers":[]}"#

    static func answer(_ status: String, _ extraHeaders: String = "", body: String) -> [UInt8] {
        Array("HTTP/1.1 \(status)\r\n\(extraHeaders)Content-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
    }

    /// A `407` followed by bytes it did not announce: the answer to the credentials goes on a
    /// new connection, never after bytes whose meaning is unknown.
    @Test func bytesPastA407sBodyMakeTheNextLegANewConnection() async throws {
        let legs = Mutex<[(connection: Int, head: String)]>([])
        let accepted = Atomic<Int>(0)
        let server = try LoopbackServer(connections: 2) { fd in
            let connection = accepted.add(1, ordering: .relaxed).newValue
            defer { close(fd) }
            while true {
                let head = BadRelay.readHead(fd)
                guard !head.isEmpty else { return }
                legs.withLock { $0.append((connection, head)) }
                if head.contains("Proxy-Authorization: Basic ") {
                    LoopbackServer.sendAll(fd, Self.answer("200 OK", "Content-Type: application/json\r\n", body: Self.config))
                } else {
                    LoopbackServer.sendAll(fd, Self.answer("407 Proxy Authentication Required",
                                                           "Proxy-Authenticate: Basic realm=\"it\"\r\n", body: "auth-required\n")
                                                + Array("HTTP/1.1 200 OK\r\n\r\nstray".utf8))
                }
            }
        }
        let document = try await RelayInfrastructure().applicationConfig(
            from: try Scripted.endpoint(server.port), credentials: ClientCredentials(user: "alice", password: "secret"))
        #expect(String(decoding: document, as: UTF8.self) == Self.config)
        let seen = legs.withLock { $0 }
        #expect(seen.map(\.connection) == [1, 2], "\(seen)")
    }

    /// A `407` that ends where it says keeps its connection for the answer (NTLM needs that).
    @Test func aCleanlyEnded407KeepsItsConnectionForTheAnswer() async throws {
        let legs = Mutex<[Int]>([])
        let accepted = Atomic<Int>(0)
        let server = try LoopbackServer(connections: 2) { fd in
            let connection = accepted.add(1, ordering: .relaxed).newValue
            defer { close(fd) }
            while true {
                let head = BadRelay.readHead(fd)
                guard !head.isEmpty else { return }
                legs.withLock { $0.append(connection) }
                LoopbackServer.sendAll(fd, head.contains("Proxy-Authorization: Basic ")
                    ? Self.answer("200 OK", "Content-Type: application/json\r\n", body: Self.config)
                    : Self.answer("407 Proxy Authentication Required", "Proxy-Authenticate: Basic realm=\"it\"\r\n",
                                  body: "auth-required\n"))
            }
        }
        _ = try await RelayInfrastructure().applicationConfig(
            from: try Scripted.endpoint(server.port), credentials: ClientCredentials(user: "alice", password: "secret"))
        #expect(legs.withLock { $0 } == [1, 1])
    }
}
