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

    /// Which connection (1, 2) each request came on.
    final class Legs: Sendable {
        private let connections = Mutex<[Int]>([])
        func add(_ connection: Int) { connections.withLock { $0.append(connection) } }
        var all: [Int] { connections.withLock { $0 } }
    }

    /// A relay answering each request without credentials with `challenge`, and one with
    /// them with the configuration document.
    static func relay(challenge: [UInt8], legs: Legs) throws -> LoopbackServer {
        let accepted = Atomic<Int>(0)
        return try LoopbackServer(connections: 2) { fd in
            let connection = accepted.add(1, ordering: .relaxed).newValue
            defer { close(fd) }
            while true {
                let head = BadRelay.readHead(fd)
                guard !head.isEmpty else { return }
                legs.add(connection)
                LoopbackServer.sendAll(fd, head.contains("Proxy-Authorization: Basic ")
                    ? Self.answer("200 OK", "Content-Type: application/json\r\n", body: Self.config) : challenge)
            }
        }
    }

    static let challenge = answer("407 Proxy Authentication Required", "Proxy-Authenticate: Basic realm=\"it\"\r\n",
                                  body: "auth-required\n")

    static func config(from server: LoopbackServer) async throws -> [UInt8] {
        try await RelayInfrastructure().applicationConfig(
            from: try Scripted.endpoint(server.port), credentials: ClientCredentials(user: "alice", password: "secret"))
    }

    /// A `407` followed by bytes it did not announce: the answer to the credentials goes on a
    /// new connection, never after bytes whose meaning is unknown.
    @Test func bytesPastA407sBodyMakeTheNextLegANewConnection() async throws {
        let legs = Legs()
        let server = try Self.relay(challenge: Self.challenge + Array("HTTP/1.1 200 OK\r\n\r\nstray".utf8), legs: legs)
        #expect(String(decoding: try await Self.config(from: server), as: UTF8.self) == Self.config)
        #expect(legs.all == [1, 2])
    }

    /// A `407` that ends where it says keeps its connection for the answer (NTLM needs that).
    @Test func aCleanlyEnded407KeepsItsConnectionForTheAnswer() async throws {
        let legs = Legs()
        let server = try Self.relay(challenge: Self.challenge, legs: legs)
        #expect(String(decoding: try await Self.config(from: server), as: UTF8.self) == Self.config)
        #expect(legs.all == [1, 1])
    }
}
