/// Every failure the client library reports: a stable machine-readable `code` to branch on,
/// a readable message, and what caused it underneath (the errno, the TLS failure with
/// OpenSSL's error stack, the relay's status and reason code). Descriptions never carry a
/// credential, a header value or payload bytes.
public struct RelayClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as a stable code. A struct around a private enum, so that codes can
    /// be added without breaking a caller's exhaustive switch.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Sendable {
            case relayUnreachable = "relay-unreachable"
            case relayTimeout = "relay-timeout"
            case relayRefused = "relay-refused"
            case relayBadResponse = "relay-bad-response"
            case proxyAuthFailed = "proxy-auth-failed"
            case mutualAuthFailed = "mutual-auth-failed"
            case hostNotFound = "host-not-found"
            case connectionRefused = "connection-refused"
            case unreachable
            case connectionReset = "connection-reset"
            case connectionFailed = "connection-failed"
            case timeout
            case cancelled
            case tlsCertUntrusted = "tls-cert-untrusted"
            case tlsCertExpired = "tls-cert-expired"
            case tlsHostMismatch = "tls-host-mismatch"
            case tlsVersion = "tls-version"
            case tlsFailed = "tls-failed"
            case tlsConfiguration = "tls-configuration"
            case closed
            case concurrentOperation = "concurrent-operation"
            case invalidState = "invalid-state"
            case notOffered = "not-offered"
        }

        private let value: Value

        private init(_ value: Value) {
            self.value = value
        }

        /// No relay of the list could be reached.
        public static let relayUnreachable = Code(.relayUnreachable)
        /// A relay did not answer in time.
        public static let relayTimeout = Code(.relayTimeout)
        /// A relay answered with a refusal: `httpStatus` and `reasonCode` say which.
        public static let relayRefused = Code(.relayRefused)
        /// A relay answered something that is not an HTTP proxy response.
        public static let relayBadResponse = Code(.relayBadResponse)
        /// The relay refused the proxy credentials.
        public static let proxyAuthFailed = Code(.proxyAuthFailed)
        /// The relay accepted the Negotiate credentials, but its final token does not prove
        /// it is the relay the ticket was for; the connection was closed unused.
        public static let mutualAuthFailed = Code(.mutualAuthFailed)
        /// The host name did not resolve.
        public static let hostNotFound = Code(.hostNotFound)
        /// The peer refused the TCP connection (ECONNREFUSED).
        public static let connectionRefused = Code(.connectionRefused)
        /// No route to the peer (ENETUNREACH, EHOSTUNREACH).
        public static let unreachable = Code(.unreachable)
        /// The peer reset the connection, or closed it in a way that cuts the stream.
        public static let connectionReset = Code(.connectionReset)
        /// Another socket failure; `errno` says which.
        public static let connectionFailed = Code(.connectionFailed)
        /// A connect, handshake, read or write waited longer than its timeout.
        public static let timeout = Code(.timeout)
        /// The task was cancelled; the stream is closed.
        public static let cancelled = Code(.cancelled)
        /// The server's certificate does not chain to a trusted CA.
        public static let tlsCertUntrusted = Code(.tlsCertUntrusted)
        /// The server's certificate has expired or is not valid yet.
        public static let tlsCertExpired = Code(.tlsCertExpired)
        /// The server's certificate names another host or address.
        public static let tlsHostMismatch = Code(.tlsHostMismatch)
        /// The server and the client share no enabled TLS version.
        public static let tlsVersion = Code(.tlsVersion)
        /// Another TLS failure; `tlsDetail` has OpenSSL's words.
        public static let tlsFailed = Code(.tlsFailed)
        /// The TLS options cannot be applied (a CA file that does not load, no version).
        public static let tlsConfiguration = Code(.tlsConfiguration)
        /// The stream was closed by this side.
        public static let closed = Code(.closed)
        /// A second read (or write) started while one was still pending on the same stream.
        public static let concurrentOperation = Code(.concurrentOperation)
        /// The call does not fit the object's state (a second connect, a read before open).
        public static let invalidState = Code(.invalidState)
        /// The relay answered a request for one of dynrelay's own endpoints with something
        /// else: it is another kind of proxy (squid), or an older relay.
        public static let notOffered = Code(.notOffered)

        /// The stable spelling, e.g. `tls-host-mismatch`.
        public var name: String { value.rawValue }

        public var description: String { name }
    }

    /// What went wrong.
    public let code: Code
    /// What was being done and why it failed, without secrets.
    public let message: String
    /// The errno underneath, when a system call failed.
    public let errno: Int32?
    /// The TLS failure's detail (verify result, alerts, OpenSSL's error stack), for TLS codes.
    public let tlsDetail: String?
    /// The relay's HTTP status, for `relay-refused` and `proxy-auth-failed`.
    public let httpStatus: Int?
    /// The relay's reason code (the body of its refusal, also in its audit row).
    public let reasonCode: String?

    /// A failure of `code`, with what caused it.
    public init(_ code: Code, _ message: String, errno: Int32? = nil, tlsDetail: String? = nil,
                httpStatus: Int? = nil, reasonCode: String? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
        self.tlsDetail = tlsDetail
        self.httpStatus = httpStatus
        self.reasonCode = reasonCode
    }

    /// A relay's refusal: its status and reason code.
    public static func relayRefused(status: Int, reasonCode: String?, _ message: String) -> RelayClientError {
        RelayClientError(.relayRefused, message, httpStatus: status, reasonCode: reasonCode)
    }

    /// `tls-host-mismatch: TLS handshake with app.corp:443: … (certificate verify: …)`.
    public var description: String {
        var text = "\(code): \(message)"
        if let httpStatus { text += " (status \(httpStatus)" + (reasonCode.map { ", reason \($0)" } ?? "") + ")" }
        if let tlsDetail { text += " (\(tlsDetail))" }
        return text
    }

    static let closedStream = RelayClientError(.closed, "the stream is closed")
    static let closedOnRelease = RelayClientError(.closed, "the stream was released without close()")
    static let cancelledTask = RelayClientError(.cancelled, "the task was cancelled; the stream is closed")
}
