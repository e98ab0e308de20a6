/// Whether a failed request may be sent again on another relay.
///
/// Only when it cannot have reached the app server: nothing of it was relayed (the relay
/// was unreachable or refused it itself, the tunnel never opened, the request was never
/// written), or it is idempotent, no byte of a response arrived and its body can be sent
/// again. Anything else is reported to the caller rather than silently sent twice.
public struct RetryDecision: Hashable, Sendable {
    /// How the attempt failed, as far as the client can tell.
    public enum Failure: Hashable, Sendable {
        /// The connection to the relay was refused, unreachable or reset before it was accepted.
        case relayConnectFailed
        /// No connection to the relay within the connect timeout.
        case relayConnectTimedOut
        /// The relay itself refused the request (`503` overloaded, or another refusal of its
        /// own) before relaying any of it.
        case relayRefused(status: Int)
        /// A `CONNECT` that did not get its 2xx: refused, closed, reset or timed out. The
        /// request inside the tunnel was never sent.
        case tunnelNotEstablished
        /// The connection (a pooled one gone stale, say) failed before any byte of the request was written.
        case requestNotSent
        /// The connection failed or timed out after request bytes may have been relayed.
        case connectionLost(responseStarted: Bool)
    }

    /// Why the decision went the way it did; the raw value is a stable code for logs.
    public enum Reason: String, Hashable, Sendable {
        /// Resend: the relay could not be reached.
        case relayUnreachable = "relay-unreachable"
        /// Resend: the relay did not accept the connection in time.
        case relayTimedOut = "relay-timed-out"
        /// Resend: the relay refused before relaying anything.
        case relayRefused = "relay-refused"
        /// Resend: the tunnel never opened, so nothing went through it.
        case tunnelNotEstablished = "tunnel-not-established"
        /// Resend: no byte of the request was written.
        case requestNotSent = "request-not-sent"
        /// Resend: an idempotent request, no response byte, a body that can be sent again.
        case idempotentWithoutResponse = "idempotent-without-response"
        /// A response had begun: the server acted on the request.
        case responseStarted = "response-started"
        /// The request may have reached the server and the method is not idempotent.
        case notIdempotent = "not-idempotent"
        /// The body was a one-shot stream that has been consumed.
        case bodyNotReplayable = "body-not-replayable"
    }

    /// The methods RFC 9110 §9.2.2 calls idempotent.
    public static let idempotentMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]

    /// Whether the request may be sent again on another relay.
    public let mayResend: Bool
    /// The rule that decided.
    public let reason: Reason

    /// Decides for a request with `method` and `body` that failed as `failure` says.
    public init(failure: Failure, method: String, body: RequestBodyKind) {
        (mayResend, reason) = Self.decide(failure, method: method, body: body)
    }

    private static func decide(_ failure: Failure, method: String, body: RequestBodyKind) -> (Bool, Reason) {
        switch failure {
        case .relayConnectFailed:
            return (true, .relayUnreachable)
        case .relayConnectTimedOut:
            return (true, .relayTimedOut)
        case .tunnelNotEstablished:
            return (true, .tunnelNotEstablished)
        case .requestNotSent:
            return (true, .requestNotSent)
        case .relayRefused:
            // An absolute-form request's body may have streamed to the relay before it answered.
            return body == .oneShot ? (false, .bodyNotReplayable) : (true, .relayRefused)
        case .connectionLost(responseStarted: true):
            return (false, .responseStarted)
        case .connectionLost(responseStarted: false):
            if !idempotentMethods.contains(method) { return (false, .notIdempotent) }
            if body == .oneShot { return (false, .bodyNotReplayable) }
            return (true, .idempotentWithoutResponse)
        }
    }
}
