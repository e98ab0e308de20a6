import Synchronization
import Testing
@testable import RelayCore

/// The relay's own endpoints in the session: answered with no upstream, one row each,
/// keep-alive, exact paths only, and the config endpoint behind proxy authentication.
@Suite struct ProxySessionRelayEndpointTests {
    static let statusBody = #"{"status":"ok","version":"1.2.3","instance":"relay-a"}"# + "\n"
    static let statusRequest = "GET /.well-known/dynrelay/status HTTP/1.1\r\nHost: relay\r\n\r\n"
    static let configRequest = "GET /.well-known/dynrelay/config HTTP/1.1\r\nHost: relay\r\n\r\n"

    static func settings(draining: Bool = false, requiresAuth: Bool = false) throws -> ProxySession.Settings {
        var settings = try ProxySessionTests.settings()
        settings.relayFacts = RelayFacts(version: "1.2.3", instance: "relay-a", isDraining: { draining })
        settings.requiresAuth = requiresAuth
        return settings
    }

    static func answer(_ status: String, _ body: String, headOnly: Bool = false, connection: String? = nil) -> String {
        "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Cache-Control: no-store\r\n" + (connection.map { "Connection: \($0)\r\n" } ?? "") + "\r\n"
            + (headOnly ? "" : body)
    }

    static func sent(_ actions: [ProxySessionAction]) -> [String] {
        actions.compactMap { if case .sendToClient(let bytes) = $0 { return String(decoding: bytes, as: UTF8.self) } else { return nil } }
    }

    static func touchesUpstream(_ actions: [ProxySessionAction]) -> Bool {
        actions.contains {
            switch $0 {
            case .connect, .resolve, .sendToUpstream, .authenticate: return true
            default: return false
            }
        }
    }

    @Test func statusIsAnsweredAtEverySplitAndTheConnectionStays() throws {
        for split in 0...Self.statusRequest.utf8.count {
            var session = ProxySession(settings: try Self.settings(requiresAuth: true))
            let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes(Self.statusRequest), splitAt: [split])
            let expected = Self.answer("200 OK", Self.statusBody)
            #expect(Self.sent(actions) == [expected], "split \(split)")
            #expect(!Self.touchesUpstream(actions), "no auth, no upstream: split \(split)")
            let rows = ProxySessionTests.auditEntries(actions)
            #expect(rows == [AuditEntry(event: .requestClose, decision: .allow, reason: .relayStatus,
                                        target: "/.well-known/dynrelay/status", status: 200,
                                        bytesDown: Int64(expected.utf8.count), durationMs: 0)], "split \(split)")
            #expect(!actions.contains(.closeClient) && session.wantsClientBytes && !session.isFinished)
        }
    }

    @Test func headHasTheLengthButNoBody() throws {
        var session = ProxySession(settings: try Self.settings())
        let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes(
            "HEAD /.well-known/dynrelay/status HTTP/1.1\r\nHost: relay\r\n\r\n"))
        #expect(Self.sent(actions) == [Self.answer("200 OK", Self.statusBody, headOnly: true)])
        #expect(ProxySessionTests.auditEntries(actions).map(\.status) == [200])
    }

    @Test func drainingIs503AndCloses() throws {
        var session = ProxySession(settings: try Self.settings(draining: true))
        let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes(Self.statusRequest))
        let body = #"{"status":"draining","version":"1.2.3","instance":"relay-a"}"# + "\n"
        #expect(Self.sent(actions) == [Self.answer("503 Service Unavailable", body, connection: "close")])
        #expect(ProxySessionTests.auditEntries(actions).map(\.status) == [503])
        #expect(actions.last == .closeClient)
    }

    @Test func otherMethodsAre405WithAllow() throws {
        for request in ["POST /.well-known/dynrelay/status HTTP/1.1\r\nHost: relay\r\nContent-Length: 2\r\n\r\n{}",
                        "DELETE /.well-known/dynrelay/config HTTP/1.1\r\nHost: relay\r\n\r\n",
                        "OPTIONS /.well-known/dynrelay/status HTTP/1.1\r\nHost: relay\r\n\r\n"] {
            var session = ProxySession(settings: try Self.settings(requiresAuth: true))
            let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes(request))
            #expect(Self.sent(actions) == ["HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nContent-Type: text/plain\r\n"
                                           + "Content-Length: 19\r\nConnection: close\r\n\r\nmethod-not-allowed\n"], "\(request)")
            let row = try #require(ProxySessionTests.auditEntries(actions).first)
            #expect(row.event == .refused && row.reason == .methodNotAllowed && row.status == 405)
            #expect(actions.last == .closeClient && !Self.touchesUpstream(actions))
        }
    }

    /// No normalisation at all: anything but the exact path stays `not-a-proxy-request`.
    @Test func pathGamesAreNotAProxyRequest() throws {
        for path in ["/.well-known/dynrelay/status/../config", "/.well-known/dynrelay/status/", "/.well-known/dynrelay/%73tatus",
                     "//.well-known/dynrelay/status", "/.well-known/dynrelay/STATUS", "/.well-known/dynrelay/", "/"] {
            var session = ProxySession(settings: try Self.settings())
            let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes("GET \(path) HTTP/1.1\r\nHost: relay\r\n\r\n"))
            #expect(ProxySessionTests.auditEntries(actions).map(\.reason) == [.notAProxyRequest], "\(path)")
            #expect(Self.sent(actions).first?.hasPrefix("HTTP/1.1 400 ") == true && actions.last == .closeClient)
        }
    }

    /// A query is ignored, however long (the head limit bounds it), and stays out of the row.
    @Test func aQueryIsIgnored() throws {
        let query = "?" + String(repeating: "a=%00&", count: 3000)
        var session = ProxySession(settings: try Self.settings())
        let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes(
            "GET /.well-known/dynrelay/status\(query) HTTP/1.1\r\nHost: relay\r\n\r\n"))
        #expect(Self.sent(actions) == [Self.answer("200 OK", Self.statusBody)])
        #expect(ProxySessionTests.auditEntries(actions).map(\.target) == ["/.well-known/dynrelay/status"])
    }

    @Test func aBodyIsLeftUnreadSoTheAnswerCloses() throws {
        var session = ProxySession(settings: try Self.settings())
        let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes(
            "GET /.well-known/dynrelay/status HTTP/1.1\r\nHost: relay\r\nContent-Length: 4\r\n\r\nbody"))
        #expect(Self.sent(actions) == [Self.answer("200 OK", Self.statusBody, connection: "close")])
        #expect(actions.last == .closeClient)

        var ambiguous = ProxySession(settings: try Self.settings())
        let refused = ProxySessionTests.feed(&ambiguous, ProxySessionTests.bytes(
            "GET /.well-known/dynrelay/status HTTP/1.1\r\nHost: relay\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"))
        #expect(ProxySessionTests.auditEntries(refused).map(\.reason) == [.ambiguousFraming])
        #expect(Self.sent(refused).first?.hasPrefix("HTTP/1.1 400 ") == true && refused.last == .closeClient)
    }

    @Test func http10ClosesUnlessItAsksToKeepAlive() throws {
        var closing = ProxySession(settings: try Self.settings())
        let closed = ProxySessionTests.feed(&closing, ProxySessionTests.bytes("GET /.well-known/dynrelay/status HTTP/1.0\r\n\r\n"))
        #expect(Self.sent(closed) == [Self.answer("200 OK", Self.statusBody, connection: "close")])
        #expect(closed.last == .closeClient)

        var keeping = ProxySession(settings: try Self.settings())
        let kept = ProxySessionTests.feed(&keeping, ProxySessionTests.bytes(
            "GET /.well-known/dynrelay/status HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"))
        #expect(Self.sent(kept) == [Self.answer("200 OK", Self.statusBody, connection: "keep-alive")])
        #expect(!kept.contains(.closeClient))

        var hostless = ProxySession(settings: try Self.settings())
        let refused = ProxySessionTests.feed(&hostless, ProxySessionTests.bytes("GET /.well-known/dynrelay/status HTTP/1.1\r\n\r\n"))
        #expect(ProxySessionTests.auditEntries(refused).map(\.reason) == [.missingHost])
    }

    /// A pipelined burst is answered in order, nothing lost, and a CONNECT after it goes on.
    @Test func aPipelinedBurstThenAConnect() throws {
        let burst = String(repeating: Self.statusRequest, count: 100) + "CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\n\r\n"
        for split in [0, 1, Self.statusRequest.utf8.count * 50 + 7, burst.utf8.count - 1] {
            var session = ProxySession(settings: try Self.settings())
            let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes(burst), splitAt: [split])
            #expect(Self.sent(actions) == Array(repeating: Self.answer("200 OK", Self.statusBody), count: 100), "split \(split)")
            let rows = ProxySessionTests.auditEntries(actions)
            #expect(rows.map(\.reason) == Array(repeating: .relayStatus, count: 100) + [.allowed], "split \(split)")
            #expect(rows.last?.event == .tunnelOpen)
            #expect(actions.last == .connect(.v4(IPv4Address(10, 1, 2, 3)), port: 443))
        }
    }

    @Test func configWithoutAuthenticationIsOpenLikeTheRelay() throws {
        for split in 0...Self.configRequest.utf8.count {
            var session = ProxySession(settings: try Self.settings())
            let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes(Self.configRequest), splitAt: [split])
            let sent = try #require(Self.sent(actions).first)
            #expect(sent.hasPrefix("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"))
            #expect(sent.contains("\r\n\r\n" + #"{"principal":null,"scheme":null,"servers":[{"host":"10.1.2.3","ports":"443","rule":"test.conf:3","#))
            #expect(!sent.contains("10.9.9.0"), "the deny rule is not listed")
            let row = try #require(ProxySessionTests.auditEntries(actions).first)
            #expect(row.reason == .relayConfig && row.event == .requestClose && row.principal == nil && row.status == 200)
            #expect(row.bytesDown == Int64(sent.utf8.count))
            #expect(!actions.contains(.closeClient))
        }
    }

    @Test func configAsksForCredentialsAndAnswersThePrincipal() throws {
        for split in [0, 20, Self.configRequest.utf8.count - 1] {
            var session = ProxySession(settings: try Self.settings(requiresAuth: true))
            let request = Self.configRequest.replacingOccurrences(of: "\r\n\r\n", with: "\r\nProxy-Authorization: Basic YTpi\r\n\r\n")
            // A status request pipelined behind it is answered once the credentials are.
            let asked = ProxySessionTests.feed(&session, ProxySessionTests.bytes(request + Self.statusRequest), splitAt: [split])
            let authRequest = try #require(ProxySessionAuthTests.authRequests(asked).first, "split \(split)")
            #expect(authRequest.method == "GET" && authRequest.target == "/.well-known/dynrelay/config")
            #expect(authRequest.authorization == "Basic YTpi" && Self.sent(asked).isEmpty)
            let granted = session.handle(.authFinished(.granted(ProxySessionAuthTests.alice, scope: .sameCredentials)), now: 2_000_000)
            let sent = Self.sent(granted)
            #expect(sent.count == 2)
            #expect(sent.first?.contains("\r\n\r\n" + #"{"principal":"alice","scheme":"Basic","servers":["#) == true)
            #expect(sent.last == Self.answer("200 OK", Self.statusBody))
            let rows = ProxySessionTests.auditEntries(granted)
            #expect(rows.map(\.reason) == [.relayConfig, .relayStatus])
            #expect(rows.first?.principal == "alice" && rows.first?.scheme == "Basic" && rows.last?.principal == nil)
            #expect(!Self.touchesUpstream(granted))
        }
    }

    @Test func configRefusedIs407AndTheConnectionWaitsForTheNextAttempt() throws {
        var session = ProxySession(settings: try Self.settings(requiresAuth: true))
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes(Self.configRequest))
        let refused = session.handle(.authFinished(.refused(ProxySessionAuthTests.challenge)), now: 2_000_000)
        let sent = try #require(Self.sent(refused).first)
        #expect(sent.hasPrefix("HTTP/1.1 407 ") && sent.contains("Proxy-Authenticate: Basic realm=\"r\"\r\n"))
        #expect(ProxySessionTests.auditEntries(refused).map(\.target) == ["/.well-known/dynrelay/config"])
        #expect(!refused.contains(.closeClient) && session.wantsClientBytes)
    }

    @Test func negotiatesMutualTokenComesBackOnTheAnswer() throws {
        var session = ProxySession(settings: try Self.settings(requiresAuth: true))
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes(Self.configRequest))
        let principal = AuthPrincipal(name: "alice@EXAMPLE.TEST", scheme: "Negotiate")
        let granted = session.handle(.authFinished(.granted(principal, scope: .connection, mutualAuth: "Negotiate oYG0")), now: 2)
        #expect(Self.sent(granted).first?.hasPrefix("HTTP/1.1 200 OK\r\nProxy-Authenticate: Negotiate oYG0\r\n") == true)
    }
}
