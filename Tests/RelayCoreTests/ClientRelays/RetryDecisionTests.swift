import Testing
@testable import RelayCore

@Suite("Retry decision")
struct RetryDecisionTests {
    typealias Row = (RetryDecision.Failure, String, RequestBodyKind, Bool, RetryDecision.Reason)

    static let table: [Row] = [
        // Nothing reached the app server: any method, and the body was never read.
        (.relayConnectFailed, "POST", .oneShot, true, .relayUnreachable),
        (.relayConnectTimedOut, "PATCH", .oneShot, true, .relayTimedOut),
        (.tunnelNotEstablished, "POST", .oneShot, true, .tunnelNotEstablished),
        (.requestNotSent, "POST", .oneShot, true, .requestNotSent),
        (.relayRefused(status: 503), "POST", .replayable, true, .relayRefused),
        (.relayRefused(status: 502), "POST", .none, true, .relayRefused),
        // The relay refused, but a one-shot body may have gone to it already.
        (.relayRefused(status: 503), "POST", .oneShot, false, .bodyNotReplayable),
        // It may have reached the server.
        (.connectionLost(responseStarted: false), "GET", .none, true, .idempotentWithoutResponse),
        (.connectionLost(responseStarted: false), "HEAD", .none, true, .idempotentWithoutResponse),
        (.connectionLost(responseStarted: false), "OPTIONS", .none, true, .idempotentWithoutResponse),
        (.connectionLost(responseStarted: false), "TRACE", .none, true, .idempotentWithoutResponse),
        (.connectionLost(responseStarted: false), "PUT", .replayable, true, .idempotentWithoutResponse),
        (.connectionLost(responseStarted: false), "DELETE", .none, true, .idempotentWithoutResponse),
        (.connectionLost(responseStarted: false), "PUT", .oneShot, false, .bodyNotReplayable),
        (.connectionLost(responseStarted: false), "POST", .replayable, false, .notIdempotent),
        (.connectionLost(responseStarted: false), "PATCH", .none, false, .notIdempotent),
        (.connectionLost(responseStarted: false), "CONNECT", .none, false, .notIdempotent),
        (.connectionLost(responseStarted: false), "get", .none, false, .notIdempotent),
        (.connectionLost(responseStarted: true), "GET", .none, false, .responseStarted),
        (.connectionLost(responseStarted: true), "POST", .replayable, false, .responseStarted),
    ]

    @Test(arguments: table.indices)
    func decides(row: Int) {
        let (failure, method, body, mayResend, reason) = Self.table[row]
        let decision = RetryDecision(failure: failure, method: method, body: body)
        #expect(decision.mayResend == mayResend, "\(failure) \(method) \(body)")
        #expect(decision.reason == reason, "\(failure) \(method) \(body)")
    }

    @Test func reasonCodesAreStable() {
        #expect(RetryDecision.Reason.idempotentWithoutResponse.rawValue == "idempotent-without-response")
        #expect(RetryDecision.Reason.responseStarted.rawValue == "response-started")
        #expect(RetryDecision.Reason.relayRefused.rawValue == "relay-refused")
    }
}
