import Testing
@testable import RelayClient

@Suite struct ProxyConnectHandshakeTests {
    /// Feeds the reply in two parts; once established, later bytes are tunnel payload and
    /// are appended to the leftover, as a caller reading the stream would see them.
    static func run(_ reply: String, splitAt split: Int) -> ProxyConnectHandshake.Progress {
        var handshake = ProxyConnectHandshake(host: "app.corp.example", port: 443)
        _ = handshake.start()
        let bytes = Array(reply.utf8)
        let parts = [Array(bytes[..<split]), Array(bytes[split...])]
        for (index, part) in parts.enumerated() {
            let progress = handshake.receive(part)
            if case .established(let leftover) = progress {
                return .established(leftover: leftover + parts[(index + 1)...].flatMap { $0 })
            }
            if progress != .needMore { return progress }
        }
        return .needMore
    }

    @Test func requestNamesTheAuthorityAndExtraHeaders() {
        var handshake = ProxyConnectHandshake(host: "2001:db8::1", port: 22,
                                              extraHeaders: [(name: "Proxy-Authorization", value: "Basic eDp5")])
        let request = String(decoding: handshake.start(), as: UTF8.self)
        #expect(request == "CONNECT [2001:db8::1]:22 HTTP/1.1\r\nHost: [2001:db8::1]:22\r\nProxy-Authorization: Basic eDp5\r\n\r\n")
    }

    @Test func establishedAtEverySplitKeepsServerFirstBytes() {
        let reply = "HTTP/1.1 200 Connection established\r\n\r\nSSH-2.0-x"
        for split in 0...reply.utf8.count {
            #expect(Self.run(reply, splitAt: split) == .established(leftover: Array("SSH-2.0-x".utf8)), "split \(split)")
        }
    }

    @Test func refusalCarriesStatusAndReasonCode() {
        let reply = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 15\r\nConnection: close\r\n\r\nnot-registered\n"
        for split in 0...reply.utf8.count {
            let progress = Self.run(reply, splitAt: split)
            #expect(progress == .failed(.init(status: 403, reason: "not-registered", challenges: [])), "split \(split)")
        }
    }

    @Test func authenticationChallengesAreKept() {
        let reply = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Digest realm=\"r\"\r\n"
            + "Proxy-Authenticate: Basic realm=\"r\"\r\nContent-Length: 0\r\n\r\n"
        guard case .failed(let failure) = Self.run(reply, splitAt: 10) else {
            Issue.record("expected a failure")
            return
        }
        #expect(failure.status == 407)
        #expect(failure.challenges == ["Digest realm=\"r\"", "Basic realm=\"r\""])
    }

    /// A negative length is unusable: the refusal keeps its status and takes its reason
    /// from the status line, as with no length at all.
    @Test func refusalWithANegativeContentLengthKeepsItsStatus() {
        let reply = "HTTP/1.1 403 Forbidden\r\nContent-Length: -1\r\n\r\n"
        for split in 0...reply.utf8.count {
            #expect(Self.run(reply, splitAt: split) == .failed(.init(status: 403, reason: "Forbidden", challenges: [])), "split \(split)")
        }
    }

    @Test func garbageAndEarlyCloseFail() {
        #expect(Self.run("SSH-2.0-not-a-proxy\r\n\r\n", splitAt: 3) == .failed(.init(status: 0, reason: "bad-response", challenges: [])))
        var handshake = ProxyConnectHandshake(host: "a", port: 1)
        _ = handshake.start()
        _ = handshake.receive(Array("HTTP/1.1 2".utf8))
        #expect(handshake.receiveEOF().reason == "closed-early")
    }

    /// Whether the next attempt may go on the same connection: only after an HTTP/1.1
    /// refusal whose body was read to its Content-Length and that did not ask to close.
    @Test(arguments: [
        ("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 14\r\n\r\nauth-required\n", true),
        ("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n", true),
        ("HTTP/1.1 407 Proxy Authentication Required\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n", false),
        ("HTTP/1.0 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n", false),
        ("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 5000\r\n\r\n" + String(repeating: "x", count: 5000), false),
    ])
    func keepsConnectionOnlyWhenTheRefusalIsFramedAndKept(reply: String, keeps: Bool) {
        for split in 0...reply.utf8.count {
            guard case .failed(let failure) = Self.run(reply, splitAt: split) else {
                Issue.record("split \(split): not a refusal")
                return
            }
            #expect(failure.status == 407)
            #expect(failure.keepsConnection == keeps, "split \(split)")
        }
    }

    /// Bytes past a refusal's body in the read that completed it make the connection
    /// unusable (what follows would be taken for the next answer); read apart, the refusal
    /// is whole and the next handshake meets them. Everything else about the refusal is the
    /// same either way (the fuzz target holds that for any split).
    @Test func bytesPastTheRefusalBodyInTheSameReadAreNotKept() {
        let refusal = "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 14\r\n\r\nauth-required\n"
        let reply = refusal + "HTTP/1.1 200 OK\r\n\r\n"
        guard case .failed(let together) = Self.run(reply, splitAt: reply.utf8.count),
              case .failed(let apart) = Self.run(reply, splitAt: refusal.utf8.count) else {
            Issue.record("not a refusal")
            return
        }
        #expect(!together.keepsConnection && apart.keepsConnection)
        #expect(together.status == apart.status && together.reason == apart.reason && together.challenges == apart.challenges)
    }
}
