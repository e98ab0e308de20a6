import Foundation
import Glibc
@testable import RelayClient
import RelayCore
import Testing

/// `RelayTunnel` against scripted relays: the tunnel carries bytes both ways, refusals and
/// broken relays surface as typed errors, and every wait ends at its timeout.
@Suite struct RelayTunnelScriptedTests {
    static let established = "HTTP/1.1 200 Connection established\r\n\r\n"

    /// A refusal as dynrelay writes it: the reason code is the body.
    static func refusal(_ status: Int, _ phrase: String, reason: String, headers: [String] = []) -> String {
        "HTTP/1.1 \(status) \(phrase)\r\nContent-Type: text/plain\r\n" + headers.map { $0 + "\r\n" }.joined()
            + "Content-Length: \(reason.utf8.count + 1)\r\nConnection: close\r\n\r\n\(reason)\n"
    }

    static func endpoint(_ port: UInt16, ip: String = "127.0.0.1", priority: Int = 1) throws -> RelayEndpoint {
        let host = ip.contains(":") ? "[\(ip)]" : ip
        return RelayEndpoint(url: try ClientURL(parsing: "http://\(host):\(port)/"), priority: priority)
    }

    static func options(_ relays: [RelayEndpoint], credentials: ClientCredentials? = nil,
                        timeout: Duration = .seconds(10)) -> RelayTunnelOptions {
        RelayTunnelOptions(relays: RelaySelector(relays), proxyCredentials: credentials,
                           transport: ClientTransportOptions(connectTimeout: timeout, tlsHandshakeTimeout: timeout,
                                                             idleTimeout: timeout),
                           relayAnswerTimeout: timeout)
    }

    static func open(_ relay: ScriptedRelay, host: String = "app.corp.example", port: UInt16 = 443,
                     proxyIP: String = "127.0.0.1", credentials: ClientCredentials? = nil,
                     timeout: Duration = .seconds(10)) async throws(RelayClientError) -> RelayTunnel {
        let tunnel = RelayTunnel(options: options([try! endpoint(relay.port, ip: proxyIP)], credentials: credentials,
                                                  timeout: timeout))
        try await tunnel.connect(host: host, port: port)
        return tunnel
    }

    /// Reads until end of stream, bounded by the tunnel's idle timeout and a count.
    static func readToEOF(_ tunnel: RelayTunnel) async throws -> [UInt8] {
        var all: [UInt8] = []
        for _ in 0..<100_000 {
            let chunk = try await tunnel.read()
            if chunk.isEmpty { return all }
            all += chunk
        }
        throw RelayClientError(.timeout, "no end of stream after 100000 reads")
    }

    static func readExactly(_ count: Int, from tunnel: RelayTunnel) async throws -> [UInt8] {
        var all: [UInt8] = []
        while all.count < count {
            let chunk = try await tunnel.read(maxBytes: count - all.count)
            if chunk.isEmpty { break }
            all += chunk
        }
        return all
    }

    static func pattern(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
    }

    /// The error `body` throws, or nil.
    static func failure(_ body: () async throws(RelayClientError) -> Void) async -> RelayClientError? {
        do throws(RelayClientError) {
            try await body()
            return nil
        } catch {
            return error
        }
    }

    @Test func sendsTheConnectHeadAndCarriesBytesBothWays() async throws {
        let relay = try ScriptedRelay([.sendText(Self.established), .echoUntilEOF])
        defer { relay.stop() }
        let tunnel = try await Self.open(relay)
        #expect(tunnel.state == .open)
        try await tunnel.write(Array("hello".utf8))
        #expect(try await Self.readExactly(5, from: tunnel) == Array("hello".utf8))
        // More than one read and one socket buffer's worth, in both directions.
        let payload = Self.pattern(300_000)
        for offset in stride(from: 0, to: payload.count, by: 50_000) {
            let part = Array(payload[offset..<(offset + 50_000)])
            try await tunnel.write(part)
            #expect(try await Self.readExactly(part.count, from: tunnel) == part, "echo of bytes \(offset)...")
        }
        try await tunnel.shutdownWrite()
        #expect(try await tunnel.read() == [], "the relay's FIN after ours reads as end of stream")
        #expect(relay.waitUntilFinished())
        #expect(relay.requestHead == "CONNECT app.corp.example:443 HTTP/1.1\r\nHost: app.corp.example:443\r\n\r\n")
        #expect(relay.received == Array("hello".utf8) + payload)
        await tunnel.close()
        #expect(tunnel.state == .closed)
    }

    /// Half-close: after our FIN the server's reply still arrives, then its own FIN.
    @Test func shutdownWriteLetsTheReplyThrough() async throws {
        let relay = try ScriptedRelay([.sendText(Self.established), .readUntilEOF, .sendText("reply after your EOF")])
        defer { relay.stop() }
        let tunnel = try await Self.open(relay)
        try await tunnel.write(Array("request".utf8))
        try await tunnel.shutdownWrite()
        #expect(try await Self.readToEOF(tunnel) == Array("reply after your EOF".utf8))
        #expect(relay.waitUntilFinished())
        #expect(relay.received == Array("request".utf8))
    }

    /// A server that speaks first (SSH) can land in the 200's segment: those bytes are the
    /// stream's first, whatever `maxBytes` the reads ask for.
    @Test func bytesInTheSegmentOfThe200AreTheStreamsFirst() async throws {
        let greeting = "SSH-2.0-OpenSSH_9.2\r\n"
        let relay = try ScriptedRelay([.send(Array((Self.established + greeting).utf8)), .pause(milliseconds: 100),
                                       .sendText("later")])
        defer { relay.stop() }
        let tunnel = try await Self.open(relay)
        #expect(try await tunnel.read(maxBytes: 3) == Array("SSH".utf8))
        #expect(try await Self.readExactly(greeting.utf8.count - 3, from: tunnel) == Array(greeting.utf8.dropFirst(3)))
        #expect(try await Self.readToEOF(tunnel) == Array("later".utf8))
    }

    static let refusals: [(reply: String, status: Int, reason: String)] = [
        (refusal(403, "Forbidden", reason: "not-registered"), 403, "not-registered"),
        (refusal(502, "Bad Gateway", reason: "upstream-refused"), 502, "upstream-refused"),
        (refusal(504, "Gateway Timeout", reason: "upstream-timeout"), 504, "upstream-timeout"),
    ]

    @Test(arguments: 0..<refusals.count)
    func refusalIsATypedErrorWithStatusAndReasonCode(index: Int) async throws {
        let (reply, status, reason) = Self.refusals[index]
        let relay = try ScriptedRelay([.sendText(reply)])
        defer { relay.stop() }
        let tunnel = RelayTunnel(options: Self.options([try Self.endpoint(relay.port)]))
        let error = await Self.failure { () async throws(RelayClientError) in try await tunnel.connect(host: "a.example", port: 1) }
        #expect(error?.code == .relayRefused)
        #expect(error?.httpStatus == status)
        #expect(error?.reasonCode == reason)
        #expect(tunnel.state == .failed(error!))
        #expect(tunnel.options.relays.backoffEnd(of: try Self.endpoint(relay.port)) == nil,
                "a refusal is the relay working, not failing")
    }

    /// A 407 without credentials to answer it is `proxy-auth-failed` with the relay's reason.
    @Test func challengeWithoutCredentialsIsProxyAuthFailed() async throws {
        let relay = try ScriptedRelay([.sendText(Self.refusal(407, "Proxy Authentication Required", reason: "auth-required",
                                                              headers: ["Proxy-Authenticate: Basic realm=\"it\""]))])
        defer { relay.stop() }
        let error = await Self.failure { () async throws(RelayClientError) in _ = try await Self.open(relay) }
        #expect(error?.code == .proxyAuthFailed)
        #expect(error?.httpStatus == 407)
        #expect(error?.reasonCode == "auth-required")
    }

    /// A 407 on a kept-alive connection is answered on it; the answer refused again with
    /// the same challenge ends as `proxy-auth-failed`, before the relay's timeout.
    @Test func refusedCredentialsOnAKeptAliveConnectionEndAtTheSecond407() async throws {
        let head = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"it\"\r\nContent-Length: 14\r\n\r\n"
        let again = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"it\"\r\nContent-Length: 13\r\n\r\n"
            + "bad-password\n"
        let relay = try ScriptedRelay([.sendText(head), .pause(milliseconds: 50), .sendText("auth-required\n"), .readHead,
                                       .sendText(again), .hold])
        defer { relay.stop() }
        let started = ContinuousClock.now
        let error = await Self.failure { () async throws(RelayClientError) in
            _ = try await Self.open(relay, credentials: ClientCredentials(user: "a", password: "b"), timeout: .seconds(5))
        }
        #expect(error?.code == .proxyAuthFailed)
        #expect(error?.reasonCode == "bad-password")
        #expect(ContinuousClock.now - started < .seconds(3))
        relay.stop()
        #expect(relay.waitUntilFinished())
        #expect(relay.laterHeads == ["CONNECT app.corp.example:443 HTTP/1.1\r\nHost: app.corp.example:443\r\n"
                + "Proxy-Authorization: Basic YTpi\r\n\r\n"])
    }

    /// Basic credentials accepted on the kept-alive connection open the tunnel there.
    @Test func basicAnswerOnTheSameConnectionOpensTheTunnel() async throws {
        let challenge = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"it\"\r\nContent-Length: 0\r\n\r\n"
        let relay = try ScriptedRelay([.sendText(challenge), .readHead, .sendText(Self.established + "first"), .echoUntilEOF])
        defer { relay.stop() }
        let tunnel = try await Self.open(relay, credentials: ClientCredentials(user: "a", password: "b"))
        #expect(try await Self.readExactly(5, from: tunnel) == Array("first".utf8))
        try await tunnel.write(Array("ping".utf8))
        #expect(try await Self.readExactly(4, from: tunnel) == Array("ping".utf8))
        #expect(relay.laterHeads.first?.contains("Proxy-Authorization: Basic YTpi\r\n") == true)
    }

    /// A refusal with a negative Content-Length keeps its status.
    @Test func refusalWithANegativeContentLengthKeepsItsStatus() async throws {
        let relay = try ScriptedRelay([.sendText("HTTP/1.1 403 Forbidden\r\nContent-Length: -1\r\n\r\n")])
        defer { relay.stop() }
        let error = await Self.failure { () async throws(RelayClientError) in _ = try await Self.open(relay) }
        #expect(error?.code == .relayRefused)
        #expect(error?.httpStatus == 403)
        #expect(error?.reasonCode == "Forbidden")
    }

    /// A relay that closes or resets mid-handshake cannot have opened anything: with no
    /// other relay, the tunnel fails as `relay-unreachable`.
    @Test(arguments: ["", "HTTP/1.1 20", "HTTP/1.1 200 Connection established\r\n"])
    func relayClosingMidHandshakeIsUnreachable(partial: String) async throws {
        let relay = try ScriptedRelay([.sendText(partial)])
        defer { relay.stop() }
        let error = await Self.failure { () async throws(RelayClientError) in _ = try await Self.open(relay) }
        #expect(error?.code == .relayUnreachable)
        #expect(error?.reasonCode == "closed-early")
    }

    @Test(arguments: ["SSH-2.0-OpenSSH_9.2\r\n\r\n", "HTTP/1.1 OK 200\r\n\r\n", "\u{16}\u{03}\u{01}\u{00}\u{05}hello\r\n\r\n"])
    func relaySendingGarbageIsABadResponse(garbage: String) async throws {
        let relay = try ScriptedRelay([.sendText(garbage), .hold])
        defer { relay.stop() }
        let error = await Self.failure { () async throws(RelayClientError) in _ = try await Self.open(relay) }
        #expect(error?.code == .relayBadResponse)
        #expect(error?.reasonCode == "bad-response")
    }

    /// Each wait ends at its timeout: the answer to CONNECT, and a read on an idle tunnel.
    @Test func silentRelayAndIdleTunnelTimeOut() async throws {
        let silent = try ScriptedRelay([.hold])
        defer { silent.stop() }
        var started = ContinuousClock.now
        let handshake = await Self.failure { () async throws(RelayClientError) in
            _ = try await Self.open(silent, timeout: .milliseconds(300))
        }
        #expect(handshake?.code == .relayTimeout)
        #expect(ContinuousClock.now - started >= .milliseconds(250))
        #expect(ContinuousClock.now - started < .seconds(5))

        let idle = try ScriptedRelay([.sendText(Self.established), .hold])
        defer { idle.stop() }
        let tunnel = try await Self.open(idle, timeout: .milliseconds(300))
        started = ContinuousClock.now
        let read = await Self.failure { () async throws(RelayClientError) in _ = try await tunnel.read() }
        #expect(read?.code == .timeout)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(tunnel.state == .failed(read!))
    }

    /// A relay that drops SYNs: the connect is a wait like the others.
    @Test func connectToARelayThatDropsSYNsTimesOut() async throws {
        let blackhole = try BlackholePort()
        let started = ContinuousClock.now
        let tunnel = RelayTunnel(options: Self.options([try Self.endpoint(blackhole.port)], timeout: .milliseconds(300)))
        let error = await Self.failure { () async throws(RelayClientError) in try await tunnel.connect(host: "a", port: 1) }
        #expect(error?.code == .relayTimeout)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    /// A peer that stops reading: a write larger than every buffer on the way ends at the
    /// idle timeout.
    @Test func writeToAPeerThatStopsReadingTimesOut() async throws {
        let relay = try ScriptedRelay([.sendText(Self.established), .hold])
        defer { relay.stop() }
        let tunnel = try await Self.open(relay, timeout: .milliseconds(300))
        let started = ContinuousClock.now
        let error = await Self.failure { () async throws(RelayClientError) in
            try await tunnel.write([UInt8](repeating: 0x61, count: 64 << 20))
        }
        #expect(error?.code == .timeout)
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func relayOnIPv6Loopback() async throws {
        let relay = try ScriptedRelay(ipv6: true, [.sendText(Self.established), .echoUntilEOF])
        defer { relay.stop() }
        let tunnel = try await Self.open(relay, host: "2001:db8::7", port: 22, proxyIP: "::1")
        try await tunnel.write(Array("over v6".utf8))
        #expect(try await Self.readExactly(7, from: tunnel) == Array("over v6".utf8))
        try await tunnel.shutdownWrite()
        #expect(try await Self.readToEOF(tunnel) == [])
        #expect(relay.waitUntilFinished())
        #expect(relay.requestHead == "CONNECT [2001:db8::7]:22 HTTP/1.1\r\nHost: [2001:db8::7]:22\r\n\r\n")
    }

    @Test func closedRelayPortIsUnreachableWithItsErrno() async throws {
        let closed = try ScriptedRelay([])
        let port = closed.port
        closed.stop()
        closed.waitUntilFinished()
        let tunnel = RelayTunnel(options: Self.options([try Self.endpoint(port)], timeout: .seconds(5)))
        let error = await Self.failure { () async throws(RelayClientError) in try await tunnel.connect(host: "a", port: 1) }
        #expect(error?.code == .relayUnreachable)
        #expect(error?.errno == ECONNREFUSED)
        #expect(tunnel.options.relays.backoffEnd(of: try Self.endpoint(port)) != nil, "the refusing relay is in back-off")
    }

    /// After `close`, reads and writes fail at once with `closed`, not after a timeout.
    @Test func readAndWriteAfterCloseFailAtOnce() async throws {
        let relay = try ScriptedRelay([.sendText(Self.established), .hold])
        defer { relay.stop() }
        let tunnel = try await Self.open(relay, timeout: .seconds(5))
        await tunnel.close()
        let started = ContinuousClock.now
        let read = await Self.failure { () async throws(RelayClientError) in _ = try await tunnel.read() }
        #expect(read?.code == .closed)
        let write = await Self.failure { () async throws(RelayClientError) in try await tunnel.write([1]) }
        #expect(write?.code == .closed)
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    /// Observers see every state in order, ending at the final one.
    @Test func stateChangesArriveInOrder() async throws {
        let relay = try ScriptedRelay([.sendText(Self.established), .hold])
        defer { relay.stop() }
        let tunnel = RelayTunnel(options: Self.options([try Self.endpoint(relay.port)]))
        let changes = tunnel.stateChanges()
        try await tunnel.connect(host: "a.example", port: 1)
        await tunnel.close()
        var seen: [RelayTunnelState] = []
        for await state in changes { seen.append(state) }
        #expect(seen == [.disconnected, .connecting, .open, .closing, .closed])
        let again = await Self.failure { () async throws(RelayClientError) in try await tunnel.connect(host: "a", port: 1) }
        #expect(again?.code == .invalidState)
    }

    /// Cancelling the task that waits in a read closes the tunnel at once.
    @Test func cancellingAPendingReadClosesTheTunnel() async throws {
        let relay = try ScriptedRelay([.sendText(Self.established), .hold])
        defer { relay.stop() }
        let tunnel = try await Self.open(relay)
        let reader = Task { () async -> RelayClientError? in
            await Self.failure { () async throws(RelayClientError) in _ = try await tunnel.read() }
        }
        try await Task.sleep(for: .milliseconds(100))
        let started = ContinuousClock.now
        reader.cancel()
        let error = await reader.value
        #expect(error?.code == .cancelled)
        #expect(ContinuousClock.now - started < .seconds(2))
    }
}
