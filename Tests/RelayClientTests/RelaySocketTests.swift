import Foundation
import Glibc
@testable import RelayClient
import RelayIO
import Testing

/// `RelaySocket` against scripted relays: the tunnel carries bytes both ways, refusals and
/// broken relays surface as typed errors, and every wait ends at the timeout.
@Suite struct RelaySocketTests {
    static let established = "HTTP/1.1 200 Connection established\r\n\r\n"

    /// A refusal as dynrelay writes it: the reason code is the body.
    static func refusal(_ status: Int, _ phrase: String, reason: String, headers: [String] = []) -> String {
        "HTTP/1.1 \(status) \(phrase)\r\nContent-Type: text/plain\r\n" + headers.map { $0 + "\r\n" }.joined()
            + "Content-Length: \(reason.utf8.count + 1)\r\nConnection: close\r\n\r\n\(reason)\n"
    }

    static func open(_ relay: ScriptedRelay, host: String = "app.corp.example", port: UInt16 = 443,
                     proxyIP: String = "127.0.0.1", extraHeaders: [(name: String, value: String)] = [],
                     timeout: Duration = .seconds(10)) throws -> RelaySocket {
        try RelaySocket(proxyIP: proxyIP, proxyPort: relay.port, host: host, port: port,
                        extraHeaders: extraHeaders, timeout: timeout)
    }

    /// Reads until end of stream, bounded by the socket's own timeout.
    static func readToEOF(_ socket: RelaySocket) throws -> [UInt8] {
        var all: [UInt8] = []
        while true {
            let chunk = try socket.read()
            if chunk.isEmpty { return all }
            all += chunk
        }
    }

    static func readExactly(_ count: Int, from socket: RelaySocket) throws -> [UInt8] {
        var all: [UInt8] = []
        while all.count < count {
            let chunk = try socket.read(max: count - all.count)
            if chunk.isEmpty { break }
            all += chunk
        }
        return all
    }

    static func pattern(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
    }

    @Test func sendsTheConnectHeadAndCarriesBytesBothWays() throws {
        let relay = try ScriptedRelay([.sendText(Self.established), .echoUntilEOF])
        defer { relay.stop() }
        let socket = try Self.open(relay, extraHeaders: [(name: "Proxy-Authorization", value: "Basic YTpi")])
        try socket.write(Array("hello".utf8))
        #expect(try Self.readExactly(5, from: socket) == Array("hello".utf8))
        // More than one read and one socket buffer's worth, in both directions.
        let payload = Self.pattern(300_000)
        for offset in stride(from: 0, to: payload.count, by: 50_000) {
            let part = Array(payload[offset..<(offset + 50_000)])
            try socket.write(part)
            #expect(try Self.readExactly(part.count, from: socket) == part, "echo of bytes \(offset)...")
        }
        socket.shutdownWrite()
        #expect(try socket.read() == [], "the relay's FIN after ours reads as end of stream")
        #expect(relay.waitUntilFinished())
        #expect(relay.requestHead == "CONNECT app.corp.example:443 HTTP/1.1\r\nHost: app.corp.example:443\r\n"
            + "Proxy-Authorization: Basic YTpi\r\n\r\n")
        #expect(relay.received == Array("hello".utf8) + payload)
    }

    /// Half-close: after our FIN the server's reply still arrives, then its own FIN.
    @Test func shutdownWriteLetsTheReplyThrough() throws {
        let relay = try ScriptedRelay([.sendText(Self.established), .readUntilEOF, .sendText("reply after your EOF")])
        defer { relay.stop() }
        let socket = try Self.open(relay)
        try socket.write(Array("request".utf8))
        socket.shutdownWrite()
        #expect(try Self.readToEOF(socket) == Array("reply after your EOF".utf8))
        #expect(relay.waitUntilFinished())
        #expect(relay.received == Array("request".utf8))
    }

    /// A server that speaks first (SSH) can land in the 200's segment: those bytes are the
    /// stream's first, whatever `max` the reads ask for.
    @Test func bytesInTheSegmentOfThe200AreTheStreamsFirst() throws {
        let greeting = "SSH-2.0-OpenSSH_9.2\r\n"
        let relay = try ScriptedRelay([.send(Array((Self.established + greeting).utf8)), .pause(milliseconds: 100),
                                       .sendText("later")])
        defer { relay.stop() }
        let socket = try Self.open(relay)
        #expect(try socket.read(max: 3) == Array("SSH".utf8))
        #expect(try Self.readExactly(greeting.utf8.count - 3, from: socket) == Array(greeting.utf8.dropFirst(3)))
        #expect(try Self.readToEOF(socket) == Array("later".utf8))
    }

    static let refusals: [(reply: String, expected: ProxyConnectHandshake.Failure)] = [
        (refusal(403, "Forbidden", reason: "not-registered"),
         .init(status: 403, reason: "not-registered", challenges: [])),
        (refusal(407, "Proxy Authentication Required", reason: "auth-required",
                 headers: ["Proxy-Authenticate: Digest realm=\"it\", qop=\"auth\"", "Proxy-Authenticate: Basic realm=\"it\""]),
         .init(status: 407, reason: "auth-required", challenges: ["Digest realm=\"it\", qop=\"auth\"", "Basic realm=\"it\""])),
        (refusal(502, "Bad Gateway", reason: "upstream-refused"),
         .init(status: 502, reason: "upstream-refused", challenges: [])),
    ]

    @Test(arguments: 0..<refusals.count)
    func refusalIsATypedErrorWithStatusAndReasonCode(index: Int) throws {
        let (reply, expected) = Self.refusals[index]
        let relay = try ScriptedRelay([.sendText(reply)])
        defer { relay.stop() }
        #expect(throws: expected) { try Self.open(relay) }
    }

    /// A 407 on a kept-alive connection: the refusal is complete once its body is, so the
    /// socket must not wait for an end of stream that only the relay's timeout would bring.
    @Test func refusalOnAKeptAliveConnectionEndsAtItsBody() throws {
        let head = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"it\"\r\nContent-Length: 14\r\n\r\n"
        let relay = try ScriptedRelay([.sendText(head), .pause(milliseconds: 50), .sendText("auth-required\n"), .hold])
        defer { relay.stop() }
        let started = ContinuousClock.now
        #expect(throws: ProxyConnectHandshake.Failure(status: 407, reason: "auth-required", challenges: ["Basic realm=\"it\""])) {
            try Self.open(relay, timeout: .seconds(5))
        }
        #expect(ContinuousClock.now - started < .seconds(3))
    }

    /// A relay that answers with a negative Content-Length must not bring the client down.
    @Test func refusalWithANegativeContentLengthKeepsItsStatus() throws {
        let relay = try ScriptedRelay([.sendText("HTTP/1.1 403 Forbidden\r\nContent-Length: -1\r\n\r\n")])
        defer { relay.stop() }
        #expect(throws: ProxyConnectHandshake.Failure(status: 403, reason: "Forbidden", challenges: [])) {
            try Self.open(relay)
        }
    }

    @Test(arguments: ["", "HTTP/1.1 20", "HTTP/1.1 200 Connection established\r\n"])
    func relayClosingMidHandshakeIsClosedEarly(partial: String) throws {
        let relay = try ScriptedRelay([.sendText(partial)])
        defer { relay.stop() }
        #expect(throws: ProxyConnectHandshake.Failure(status: 0, reason: "closed-early", challenges: [])) {
            try Self.open(relay)
        }
    }

    @Test(arguments: ["SSH-2.0-OpenSSH_9.2\r\n\r\n", "HTTP/1.1 OK 200\r\n\r\n", "\u{16}\u{03}\u{01}\u{00}\u{05}hello\r\n\r\n"])
    func relaySendingGarbageIsABadResponse(garbage: String) throws {
        let relay = try ScriptedRelay([.sendText(garbage), .hold])
        defer { relay.stop() }
        #expect(throws: ProxyConnectHandshake.Failure(status: 0, reason: "bad-response", challenges: [])) {
            try Self.open(relay)
        }
    }

    /// Each wait ends at the timeout with `ETIMEDOUT`: the answer to CONNECT, and a read on
    /// an idle tunnel.
    @Test func silentRelayAndIdleTunnelTimeOut() throws {
        let silent = try ScriptedRelay([.hold])
        defer { silent.stop() }
        var started = ContinuousClock.now
        let handshake = #expect(throws: IOError.self) { try Self.open(silent, timeout: .milliseconds(300)) }
        #expect(handshake?.errno == ETIMEDOUT)
        #expect(ContinuousClock.now - started >= .milliseconds(250))
        #expect(ContinuousClock.now - started < .seconds(5))

        let idle = try ScriptedRelay([.sendText(Self.established), .hold])
        defer { idle.stop() }
        let socket = try Self.open(idle, timeout: .milliseconds(300))
        started = ContinuousClock.now
        let read = #expect(throws: IOError.self) { try socket.read() }
        #expect(read?.errno == ETIMEDOUT)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    /// A relay whose accept queue is full drops the SYN: the connect is a wait like the
    /// others, not the kernel's two minutes of SYN retries.
    @Test func connectToARelayThatDropsSYNsTimesOut() throws {
        let blackhole = try BlackholePort()
        let started = ContinuousClock.now
        let error = #expect(throws: IOError.self) {
            try RelaySocket(proxyIP: "127.0.0.1", proxyPort: blackhole.port, host: "a", port: 1, timeout: .milliseconds(300))
        }
        #expect(error?.errno == ETIMEDOUT)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    /// A peer that stops reading: a write larger than every buffer on the way ends at the
    /// timeout instead of blocking in `send`. (Run on a thread, so a regression fails the
    /// test instead of hanging it: the relay's close then ends the blocked `send`.)
    @Test func writeToAPeerThatStopsReadingTimesOut() throws {
        let relay = try ScriptedRelay([.sendText(Self.established), .hold])
        let socket = UncheckedBox(try Self.open(relay, timeout: .milliseconds(300)))
        let outcome = UncheckedBox<Result<Void, Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let started = ContinuousClock.now
        Thread.detachNewThread {
            outcome.value = Result { try socket.value.write([UInt8](repeating: 0x61, count: 64 << 20)) }
            done.signal()
        }
        let returned = done.wait(timeout: .now() + 10) == .success
        relay.stop()
        if !returned { done.wait() }
        #expect(returned, "write blocked for 10 s on a 300 ms timeout")
        #expect(ContinuousClock.now - started < .seconds(10))
        guard case .failure(let error as IOError)? = outcome.value else {
            Issue.record("expected an IOError, got \(String(describing: outcome.value))")
            return
        }
        #expect(error.errno == ETIMEDOUT)
    }

    @Test func relayOnIPv6Loopback() throws {
        let relay = try ScriptedRelay(ipv6: true, [.sendText(Self.established), .echoUntilEOF])
        defer { relay.stop() }
        let socket = try Self.open(relay, host: "2001:db8::7", port: 22, proxyIP: "::1")
        try socket.write(Array("over v6".utf8))
        #expect(try Self.readExactly(7, from: socket) == Array("over v6".utf8))
        socket.shutdownWrite()
        #expect(try Self.readToEOF(socket) == [])
        #expect(relay.waitUntilFinished())
        #expect(relay.requestHead == "CONNECT [2001:db8::7]:22 HTTP/1.1\r\nHost: [2001:db8::7]:22\r\n\r\n")
    }

    @Test func unreachableOrMalformedRelayAddressIsAnIOError() throws {
        let closed = try ScriptedRelay([])
        let port = closed.port
        closed.stop()
        closed.waitUntilFinished()
        let refused = #expect(throws: IOError.self) {
            try RelaySocket(proxyIP: "127.0.0.1", proxyPort: port, host: "a", port: 1, timeout: .seconds(5))
        }
        #expect(refused?.errno == ECONNREFUSED)
        let malformed = #expect(throws: IOError.self) {
            try RelaySocket(proxyIP: "relay.example", proxyPort: 3128, host: "a", port: 1)
        }
        #expect(malformed?.errno == EINVAL)
    }

    /// After `close`, reads and writes fail at once with `EBADF`, not after a full timeout.
    @Test func readAndWriteAfterCloseFailAtOnce() throws {
        let relay = try ScriptedRelay([.sendText(Self.established), .hold])
        defer { relay.stop() }
        let socket = try Self.open(relay, timeout: .seconds(5))
        socket.close()
        let started = ContinuousClock.now
        let read = #expect(throws: IOError.self) { try socket.read() }
        #expect(read?.errno == EBADF)
        let write = #expect(throws: IOError.self) { try socket.write([1]) }
        #expect(write?.errno == EBADF)
        #expect(ContinuousClock.now - started < .seconds(2))
    }
}

/// Hands a non-Sendable value to one other thread; the test's semaphore orders the accesses.
final class UncheckedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
