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

    // MARK: Transfer-Encoding (RFC 9112 6.1, 6.3)

    @Test func aRequestWhoseFinalCodingIsNotChunkedIs400AndCloses() throws {
        for coding in ["gzip", "chunked, gzip", "identity", "chunked, chunked", "xchunked"] {
            try Self.expectRefused("POST http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nTransfer-Encoding: \(coding)\r\n\r\n5\r\nhello\r\n",
                                   status: 400, reason: .badTransferEncoding)
        }
    }

    @Test func aRequestWithCodingsBeforeChunkedIs501() throws {
        try Self.expectRefused("POST http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                               status: 501, reason: .unsupportedTransferEncoding)
    }

    /// A response coding the relay cannot frame by chunks runs until the server closes, and
    /// is relayed that way; the client is told the connection ends with it.
    @Test func aResponseWhoseFinalCodingIsNotChunkedEndsAtClose() throws {
        let response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n\u{1F}\u{0B}zipped bytes"
        for split in 0...response.utf8.count {
            var (session, text, actions) = try Self.toClient(request: "GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n",
                                                             response: response, split: split)
            #expect(text.hasPrefix("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n"), "split \(split): \(text)")
            #expect(text.contains("Connection: close\r\n"))
            #expect(text.hasSuffix("\r\n\r\n\u{1F}\u{0B}zipped bytes"), "split \(split)")
            #expect(ProxySessionTests.auditEntries(actions).isEmpty, "not finished before the close")
            let end = session.handle(.upstreamEOF, now: 6)
            #expect(ProxySessionTests.auditEntries(end).first?.reason == .completed)
            #expect(end.last == .closeClient)
        }
    }

    /// An HTTP/1.0 client knows no transfer codings: plain chunked is de-chunked for it, any
    /// other coding cannot be conveyed.
    @Test func anHTTP10ClientGetsNoCodingItCannotRead() throws {
        for coding in ["gzip, chunked", "gzip"] {
            var session = ProxySession(settings: try Self.settings())
            _ = ProxySessionTests.forwarded(&session, "GET http://10.9.1.1/ HTTP/1.0\r\n\r\n")
            let actions = ProxySessionTests.upstream(&session, "HTTP/1.1 200 OK\r\nTransfer-Encoding: \(coding)\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
            #expect(ProxySessionTests.refusalBody(actions)?.hasPrefix("HTTP/1.1 502 ") == true, "\(coding)")
            let close = try #require(ProxySessionTests.auditEntries(actions).first)
            #expect(close.reason == .badUpstreamResponse)
            #expect(close.status == 502)
            #expect(actions.last == .closeClient)
        }
    }

    // MARK: Interim and bodiless responses (RFC 9110 15.2, 8.6)

    /// What the client receives from `response`, fed in two reads split at `split`.
    static func toClient(request: String, response: String, split: Int) throws -> (ProxySession, String, [ProxySessionAction]) {
        var session = ProxySession(settings: try settings())
        _ = ProxySessionTests.forwarded(&session, request)
        let bytes = ProxySessionTests.bytes(response)
        var actions: [ProxySessionAction] = []
        for part in [bytes[..<split], bytes[split...]] where !part.isEmpty {
            actions += part.withUnsafeBytes { session.upstreamBytes($0, now: 5) }
        }
        var sent: [UInt8] = []
        for case .sendToClient(let part) in actions { sent += part }
        return (session, String(decoding: sent, as: UTF8.self), actions)
    }

    @Test func anHTTP10ClientIsNeverSentAnInterimResponse() throws {
        let response = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
            + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        for split in 0...response.utf8.count {
            let (_, text, actions) = try Self.toClient(request: "GET http://10.9.1.1/ HTTP/1.0\r\n\r\n", response: response, split: split)
            #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n") && text.hasSuffix("\r\n\r\nok"), "split \(split): \(text)")
            #expect(!text.contains("100 Continue") && !text.contains("103"), "split \(split)")
            let close = try #require(ProxySessionTests.auditEntries(actions).first)
            #expect(close.status == 200)
            #expect(close.bytesDown == Int64(text.utf8.count), "only what was sent counts")
        }
        // An HTTP/1.1 client still gets them.
        let (_, text, _) = try Self.toClient(request: "GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n", response: response, split: 0)
        #expect(text.hasPrefix("HTTP/1.1 100 Continue\r\n"))
        #expect(text.contains("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n"))
    }

    @Test func contentLengthNeverReachesTheClientOnA1xxOrA204() throws {
        let request = "GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n"
        let response = "HTTP/1.1 103 Early Hints\r\nContent-Length: 7\r\nLink: </a>\r\n\r\n"
            + "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nX-Kept: 1\r\n\r\n"
        for split in 0...response.utf8.count {
            let (_, text, actions) = try Self.toClient(request: request, response: response, split: split)
            #expect(text.hasPrefix("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n"), "split \(split): \(text)")
            #expect(text.contains("HTTP/1.1 204 No Content\r\nX-Kept: 1\r\n"), "split \(split): \(text)")
            #expect(!text.lowercased().contains("content-length") && !text.lowercased().contains("transfer-encoding"), "split \(split)")
            #expect(ProxySessionTests.auditEntries(actions).first?.status == 204)
            #expect(!actions.contains(.closeClient), "the 204 has no body: the connection stays")
        }
        // A 304 keeps its Content-Length: it describes the representation, not this message.
        let (_, notModified, _) = try Self.toClient(request: request, response: "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n", split: 0)
        #expect(notModified.contains("Content-Length: 5\r\n"))
    }

    // MARK: Leniencies real clients need, with no new reading of the bytes

    /// Java and mobile stacks send `Content-Length: 0` on CONNECT: it says there is no body,
    /// so the bytes after the head are tunnel payload as ever.
    @Test func aConnectWithContentLengthZeroIsATunnel() throws {
        let head = "CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\nContent-Length: 0\r\n\r\n"
        let hello = "\u{16}\u{03}\u{01}hello"
        for split in 0...(head + hello).utf8.count {
            var (session, actions) = try Self.run(head + hello, split: split)
            #expect(actions.contains(.connect(.v4(IPv4Address(10, 1, 2, 3)), port: 443)), "split \(split)")
            _ = session.handle(.upstreamConnected, now: 2)
            let ready = session.handle(.auditCommitted, now: 3)
            guard case .startTunnel(_, _, let leftover) = ready.first else {
                Issue.record("split \(split): expected a tunnel, got \(ready)")
                continue
            }
            #expect(leftover == ProxySessionTests.bytes(hello), "split \(split)")
        }
    }

    @Test("any other length or coding on CONNECT stays refused", arguments: [
        "Content-Length: 1\r\n", "Content-Length: 00\r\n", "Content-Length: 0\r\nContent-Length: 0\r\n", "Content-Length: 0, 0\r\n",
        "Transfer-Encoding: chunked\r\n", "Content-Length: 0\r\nTransfer-Encoding: chunked\r\n", "Transfer-Encoding: identity\r\n",
        "Content-Length: +0\r\n", "Content-Length: 0x0\r\n",
    ])
    func connectWithABodyIsAmbiguous(fields: String) throws {
        try Self.expectRefused("CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\n\(fields)\r\n", status: 400, reason: .ambiguousFraming)
    }

    /// A chunk size followed by whitespace before its extension is relayed verbatim; the
    /// same whitespace with no extension after it is still a bad chunk.
    @Test func bwsBeforeAChunkExtensionIsRelayedVerbatim() throws {
        let head = "POST http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        let body = "5 ;e\r\nhello\r\n6\t;e=v\r\n world\r\n0\r\n\r\n"
        for split in 0...body.utf8.count {
            var session = ProxySession(settings: try Self.settings())
            _ = ProxySessionTests.forwarded(&session, head)
            let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes(body), splitAt: [split])
            var up: [UInt8] = []
            for case .sendToUpstream(let part) in actions { up += part }
            #expect(String(decoding: up, as: UTF8.self) == body, "split \(split)")
            #expect(ProxySessionTests.auditEntries(actions).isEmpty, "split \(split): nothing refused")
            #expect(!session.wantsClientBytes, "the body is complete")
        }
        var session = ProxySession(settings: try Self.settings())
        _ = ProxySessionTests.forwarded(&session, head)
        let refused = ProxySessionTests.feed(&session, ProxySessionTests.bytes("5 \r\nhello\r\n0\r\n\r\n"))
        #expect(ProxySessionTests.auditEntries(refused).first?.reason == .badChunk)
        #expect(ProxySessionTests.refusalBody(refused)?.hasPrefix("HTTP/1.1 400 ") == true)
    }

    /// Field values with obs-text (RFC 9110 5.5) cross the relay byte for byte, both ways.
    @Test func obsTextCrossesTheRelayByteForByte() throws {
        let latin: [UInt8] = Array("caf".utf8) + [0xE9, 0x20, 0x80, 0xFF]
        let request = ProxySessionTests.bytes("GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nX-Latin: ") + latin
            + ProxySessionTests.bytes("\r\nX-UTF8: Zo\u{EB}\r\n\r\n")
        for split in 0...request.count {
            var session = ProxySession(settings: try Self.settings())
            _ = ProxySessionTests.feed(&session, request, splitAt: [split])
            _ = session.handle(.upstreamConnected, now: 2)
            var up: [UInt8] = []
            for case .sendToUpstream(let part) in session.handle(.auditCommitted, now: 3) { up += part }
            let expected = ProxySessionTests.bytes("\r\nX-Latin: ") + latin + ProxySessionTests.bytes("\r\nX-UTF8: Zo\u{EB}\r\n")
            #expect(up.firstRange(of: expected) != nil, "split \(split): \(up)")

            let response = ProxySessionTests.bytes("HTTP/1.1 200 OK\r\nX-Back: ") + latin + ProxySessionTests.bytes("\r\nContent-Length: 0\r\n\r\n")
            var down: [UInt8] = []
            for case .sendToClient(let part) in response.withUnsafeBytes({ session.upstreamBytes($0, now: 4) }) { down += part }
            #expect(down.firstRange(of: ProxySessionTests.bytes("\r\nX-Back: ") + latin + [13, 10]) != nil, "split \(split)")
        }
    }
}
