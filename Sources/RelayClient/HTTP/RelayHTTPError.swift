import RelayCore

/// Every failure of an HTTP request through the client library: a stable machine-readable
/// `code`, a readable message without secrets, and what lay underneath (the transport's
/// `RelayClientError`, the relay's or server's status and reason code).
public struct RelayHTTPError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as a stable code; a struct around a private enum so codes can grow.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Sendable {
            case invalidRequest = "invalid-request"
            case transport
            case badResponse = "bad-response"
            case badChunk = "bad-chunk"
            case truncatedBody = "truncated-body"
            case proxyAuthFailed = "proxy-auth-failed"
            case serverAuthFailed = "server-auth-failed"
            case mutualAuthFailed = "mutual-auth-failed"
            case relayRefused = "relay-refused"
            case redirectFailed = "redirect-failed"
            case bodyNotReplayable = "body-not-replayable"
            case aborted
        }

        private let value: Value

        private init(_ value: Value) {
            self.value = value
        }

        /// The request cannot be sent as given (a bad URL, method or header, a file that does not open).
        public static let invalidRequest = Code(.invalidRequest)
        /// The connection to the relay or through it failed; `transport` says how.
        public static let transport = Code(.transport)
        /// The relay or the server answered something that is not an HTTP/1.x response.
        public static let badResponse = Code(.badResponse)
        /// A chunked response body broke the chunk syntax.
        public static let badChunk = Code(.badChunk)
        /// The connection ended before the response body did.
        public static let truncatedBody = Code(.truncatedBody)
        /// The relay refused the proxy credentials, or none could answer its challenge.
        public static let proxyAuthFailed = Code(.proxyAuthFailed)
        /// The server refused the credentials, or none could answer its challenge.
        public static let serverAuthFailed = Code(.serverAuthFailed)
        /// The relay or the server accepted the Negotiate credentials, but its final token
        /// does not prove it is the service the ticket was for; the response was discarded
        /// and its connection closed.
        public static let mutualAuthFailed = Code(.mutualAuthFailed)
        /// The relay refused the tunnel or the request itself: `httpStatus` and `reasonCode` say why.
        public static let relayRefused = Code(.relayRefused)
        /// A redirect could not be followed: too many, a bad `Location`, an https-to-http downgrade.
        public static let redirectFailed = Code(.redirectFailed)
        /// The request would have to be sent again (after a redirect or a challenge) but its
        /// body was a one-shot stream.
        public static let bodyNotReplayable = Code(.bodyNotReplayable)
        /// The caller aborted the request.
        public static let aborted = Code(.aborted)

        /// The stable spelling, e.g. `truncated-body`.
        public var name: String { value.rawValue }

        public var description: String { name }
    }

    /// What went wrong.
    public let code: Code
    /// What was being done and why it failed, without credentials or payload.
    public let message: String
    /// The transport failure underneath, for `transport` (and for a relay's refusal of a tunnel).
    public let transport: RelayClientError?
    /// The status of the response that was refused or failed, when there was one.
    public let httpStatus: Int?
    /// The relay's reason code (the body of its refusal), when it gave one.
    public let reasonCode: String?

    /// A failure of `code`.
    public init(_ code: Code, _ message: String, transport: RelayClientError? = nil, httpStatus: Int? = nil,
                reasonCode: String? = nil) {
        self.code = code
        self.message = message
        self.transport = transport
        self.httpStatus = httpStatus
        self.reasonCode = reasonCode
    }

    /// A transport failure while `doing` something.
    static func transport(_ error: RelayClientError, _ doing: String) -> RelayHTTPError {
        RelayHTTPError(.transport, "\(doing): \(error)", transport: error)
    }

    /// `truncated-body: reading the response body: … (status 200)`.
    public var description: String {
        var text = "\(code): \(message)"
        if let httpStatus { text += " (status \(httpStatus)" + (reasonCode.map { ", reason \($0)" } ?? "") + ")" }
        return text
    }
}
