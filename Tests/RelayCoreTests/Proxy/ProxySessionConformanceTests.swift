import Testing
@testable import RelayCore

/// RFC 9110/9112 rules a session applies on its own: what it refuses, what it rewrites and
/// what it answers itself, each fed split at every offset.
@Suite struct ProxySessionConformanceTests {
    static func settings() throws -> ProxySession.Settings { try ProxySessionTests.settings() }

    /// The actions of `input` fed in two reads split at `split`.
    static func run(_ input: String, split: Int) throws -> (ProxySession, [ProxySessionAction]) {
        var session = ProxySession(settings: try settings())
        let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes(input), splitAt: [split])
        return (session, actions)
    }

    /// Asserts that `input`, however split, is refused with `status` and `reason` before any
    /// destination is contacted, with one refusal row.
    static func expectRefused(_ input: String, status: Int, reason: ReasonCode,
                              sourceLocation: Testing.SourceLocation = #_sourceLocation) throws {
        for split in 0...input.utf8.count {
            let (_, actions) = try run(input, split: split)
            let body = ProxySessionTests.refusalBody(actions) ?? ""
            #expect(body.hasPrefix("HTTP/1.1 \(status) ") && body.hasSuffix("\r\n\r\n\(reason.rawValue)\n"),
                    "split \(split): \(body)", sourceLocation: sourceLocation)
            let rows = ProxySessionTests.auditEntries(actions)
            #expect(rows.map(\.event) == [.refused] && rows.first?.reason == reason && rows.first?.status == status,
                    "split \(split): \(rows)", sourceLocation: sourceLocation)
            #expect(!actions.contains { if case .connect = $0 { return true }; if case .resolve = $0 { return true }; return false },
                    "split \(split)", sourceLocation: sourceLocation)
            #expect(actions.last == .closeClient, sourceLocation: sourceLocation)
        }
    }

    /// Asserts that `input`, however split, goes on to the upstream (a connect or a resolve).
    static func expectAccepted(_ input: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws {
        for split in 0...input.utf8.count {
            let (_, actions) = try run(input, split: split)
            #expect(ProxySessionTests.auditEntries(actions).map(\.event).allSatisfy { $0 != .refused }, "split \(split)",
                    sourceLocation: sourceLocation)
            #expect(actions.contains { if case .connect = $0 { return true }; if case .resolve = $0 { return true }; return false },
                    "split \(split): \(actions)", sourceLocation: sourceLocation)
        }
    }

    // MARK: Host (RFC 9112 3.2)

    @Test func anHTTP11RequestWithoutHostIs400() throws {
        try Self.expectRefused("GET http://10.9.1.1/ HTTP/1.1\r\nAccept: */*\r\n\r\n", status: 400, reason: .missingHost)
        try Self.expectRefused("CONNECT 10.1.2.3:443 HTTP/1.1\r\nUser-Agent: x\r\n\r\n", status: 400, reason: .missingHost)
        try Self.expectRefused("POST http://10.9.1.1/ HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi", status: 400, reason: .missingHost)
    }

    @Test func anHTTP10RequestMayOmitHost() throws {
        try Self.expectAccepted("GET http://10.9.1.1/ HTTP/1.0\r\n\r\n")
        // What `openssl s_client -proxy` sends.
        try Self.expectAccepted("CONNECT 10.1.2.3:443 HTTP/1.0\r\nProxy-Connection: Keep-Alive\r\n\r\n")
    }

    @Test func twoHostFieldsAre400() throws {
        for version in ["1.0", "1.1"] {
            try Self.expectRefused("GET http://10.9.1.1/ HTTP/\(version)\r\nHost: 10.9.1.1\r\nHost: 10.9.9.7\r\n\r\n",
                                   status: 400, reason: .badHeader)
            try Self.expectRefused("CONNECT 10.1.2.3:443 HTTP/\(version)\r\nHost: 10.1.2.3:443\r\nhost: 10.9.9.7:22\r\n\r\n",
                                   status: 400, reason: .badHeader)
        }
    }
}
