import RelayClient

/// `dynrelay-client`'s exit codes, one per kind of failure, so scripts can branch on them;
/// the relay's reason code goes to stderr.
enum ClientToolExit: Int32, CaseIterable {
    case success = 0
    /// `fetch`: the app server answered, not with a 2xx (its answer is still written).
    case httpStatus = 1
    case usage = 2
    /// No relay of the list could be reached (refused, unreachable, timed out, draining).
    case relayUnreachable = 3
    /// A relay refused the request or tunnel (403, 502, 504, …): the reason code says why.
    case relayRefused = 4
    /// The relay refused the proxy credentials.
    case proxyAuthFailed = 5
    /// The app server refused the server credentials.
    case serverAuthFailed = 6
    /// TLS failed: an untrusted, expired or other-host certificate, no shared version.
    case tls = 7
    /// The connection broke or an answer did not parse.
    case protocolError = 8
    /// A wait ran past its timeout.
    case timeout = 9
    /// A local file could not be read or written (`-o`, `--data-binary`, `--cookie-jar`).
    case localFile = 10
    /// `status`/`config`: the relay is another kind of proxy and does not offer the endpoint.
    case notOffered = 11

    /// The exit code for a library failure.
    init(_ error: RelayClientError) {
        switch error.code {
        case .relayUnreachable, .relayTimeout, .hostNotFound, .connectionRefused, .unreachable: self = .relayUnreachable
        case .relayRefused: self = .relayRefused
        case .proxyAuthFailed: self = .proxyAuthFailed
        case .tlsCertUntrusted, .tlsCertExpired, .tlsHostMismatch, .tlsVersion, .tlsFailed, .tlsConfiguration: self = .tls
        case .timeout: self = .timeout
        case .notOffered: self = .notOffered
        default: self = .protocolError
        }
    }

    /// The exit code for an HTTP client failure.
    init(_ error: RelayHTTPError) {
        if let transport = error.transport, error.code == .transport {
            self.init(transport)
            return
        }
        switch error.code {
        case .proxyAuthFailed: self = .proxyAuthFailed
        case .serverAuthFailed: self = .serverAuthFailed
        case .relayRefused: self = .relayRefused
        case .invalidRequest: self = .usage
        default: self = .protocolError
        }
    }
}
