/// The stable, machine-readable reason behind every decision and every close.
///
/// The same string appears in an HTTP refusal body, in the `reason` column of the audit
/// trail and in logs, so ops and reviewers can grep one word across all three (except that
/// a refusal body hides which of `bad-password` and `unknown-user` it was: `clientText`).
/// Raw values never change once shipped; add new cases instead.
public enum ReasonCode: String, Sendable, CaseIterable, Codable {
    // Allowed / normal outcomes.
    case allowed = "allowed"
    case clientClosed = "client-closed"
    case upstreamClosed = "upstream-closed"
    case completed = "completed"
    /// A TRACE or OPTIONS whose `Max-Forwards` was used up, answered by the relay itself.
    case answeredByRelay = "answered-by-relay"
    /// The relay's status endpoint answered (`200`, or `503` while draining).
    case relayStatus = "relay-status"
    /// The relay's configuration endpoint answered the principal's servers.
    case relayConfig = "relay-config"

    // Malformed requests: 400.
    case badRequestLine = "bad-request-line"
    case badHeader = "bad-header"
    case bareLineEnding = "bare-line-ending"
    case obsFold = "obs-fold"
    case headTooLarge = "head-too-large"
    case tooManyHeaders = "too-many-headers"
    case ambiguousFraming = "ambiguous-framing"
    case duplicateContentLength = "duplicate-content-length"
    case badContentLength = "bad-content-length"
    case unsupportedTransferEncoding = "unsupported-transfer-encoding"
    case badChunk = "bad-chunk"
    case badTarget = "bad-target"
    case ambiguousHost = "ambiguous-host"
    case unsupportedScheme = "unsupported-scheme"
    case notAProxyRequest = "not-a-proxy-request"
    /// A method other than GET or HEAD on one of the relay's own endpoints: 405.
    case methodNotAllowed = "method-not-allowed"
    case unsupportedVersion = "unsupported-version"
    /// An HTTP/1.1 request without `Host` (RFC 9112 3.2; HTTP/1.0 may omit it).
    case missingHost = "missing-host"
    /// A request Transfer-Encoding whose final coding is not `chunked` (or that applies
    /// `chunked` twice): its body's length cannot be determined (RFC 9112 6.3).
    case badTransferEncoding = "bad-transfer-encoding"

    // Policy: 403.
    case notRegistered = "not-registered"
    case denied = "denied"
    case guardedAddress = "guarded-address"
    /// The destination is one of the relay's own listening endpoints: a request to it would
    /// come back as a new request, without end. No rule lifts it.
    case relayLoop = "relay-loop"

    // Proxy authentication: 407 (a new challenge), 400 (malformed), 429, 503.
    case authRequired = "auth-required"
    /// One step of a multi-message handshake (NTLM CHALLENGE, Negotiate continuation).
    case authContinue = "auth-continue"
    case badPassword = "bad-password"
    case unknownUser = "unknown-user"
    case staleNonce = "stale-nonce"
    case replayedNonce = "replayed-nonce"
    case unsupportedAuth = "unsupported-auth"
    /// Credentials that do not parse: bad base64, duplicate or missing Digest fields, NTLM
    /// messages out of order or with fields outside the buffer.
    case badCredentials = "bad-credentials"
    /// GSS-API refused a Negotiate token; the audit row adds GSS's own words.
    case gssError = "gss-error"
    case lockedOut = "locked-out"
    /// As many password checks running for this source (or this account from it) as it has
    /// failures left before a lockout: the next guess is refused at once, uncounted; a retry once some
    /// have finished may pass.
    case tooManyAttempts = "too-many-attempts"
    /// The credential source (a helper, the user store) is broken or saturated.
    case authUnavailable = "auth-unavailable"

    // Upstream: 502 / 504.
    case resolveFailed = "resolve-failed"
    case upstreamRefused = "upstream-refused"
    case upstreamUnreachable = "upstream-unreachable"
    case upstreamTimeout = "upstream-timeout"
    case upstreamReset = "upstream-reset"
    case badUpstreamResponse = "bad-upstream-response"

    // TLS. Inside a tunnel the `200` has been sent, so these end the tunnel (with a TLS
    // alert to the client where one is due) and answer no HTTP status.
    /// A hello offered, or a ServerHello chose, no version the rule allows (the audit detail
    /// names the versions seen); on the HTTPS listener, a client offering none of its versions.
    case tlsVersionRefused = "tls-version-refused"
    /// The ClientHello's server name is not the host the tunnel was opened to.
    case sniMismatch = "sni-mismatch"
    /// The ClientHello names no server, and the rule does not say `sni=optional` or `sni=any`.
    case sniMissing = "sni-missing"
    /// The rule says `tunnel-tls=required` and the tunnel did not open with a TLS handshake.
    case tlsRequired = "tls-required"
    /// Handshake records that do not parse (truncated or oversized messages, bad lengths,
    /// an SSLv2-style hello, a ServerHello choosing a version the client did not offer).
    case badTLSHandshake = "bad-tls-handshake"
    /// The handshake did not reach its decision within `tls-inspect-timeout`.
    case tlsInspectionTimeout = "tls-inspection-timeout"
    /// The handshake needed more than the inspection buffer (64 KiB) to reach its decision.
    case tlsInspectionOverflow = "tls-inspection-overflow"
    /// Bytes that are not a TLS handshake on an HTTPS listener.
    case notTLS = "not-tls"
    /// The client's TLS handshake with the HTTPS listener failed (the detail says why).
    case clientTLSFailed = "client-tls-failed"
    /// The listener requires a client certificate and none (or none it trusts) was sent.
    case clientCertRequired = "client-cert-required"
    /// The app server's certificate does not chain to a trusted CA (self-signed, unknown issuer).
    case upstreamCertUntrusted = "upstream-cert-untrusted"
    /// The app server's certificate has expired or is not yet valid.
    case upstreamCertExpired = "upstream-cert-expired"
    /// The app server's certificate does not name the host the relay connected to.
    case upstreamCertHostMismatch = "upstream-cert-host-mismatch"
    /// The app server and the relay share no allowed TLS version.
    case upstreamTLSVersion = "upstream-tls-version"
    /// A TLS version allowed by config whose ciphers OpenSSL's security level still refuses
    /// (OpenSSL reports it as a bare `internal_error` alert).
    case tlsSecurityLevel = "tls-security-level"
    /// The relay's TLS handshake with the app server failed for another reason.
    case upstreamTLSFailed = "upstream-tls-failed"
    /// A tunnel client on the HTTPS listener ended its TLS with a bare TCP FIN and no
    /// close_notify: possibly cut on the way, so the upstream was reset, not sent a FIN that
    /// would pass for the stream's end.
    case clientTLSTruncated = "client-tls-truncated"

    // Resources and time.
    case overloaded = "overloaded"
    /// The client's source (its IPv4 address or IPv6 /64) has `max-connections-per-source`
    /// connections open already.
    case sourceLimit = "source-limit"
    /// The process is out of file descriptors (EMFILE/ENFILE): nothing could be accepted
    /// or connected for this stream.
    case outOfDescriptors = "out-of-descriptors"
    /// Bytes were queued for a peer that took none of them for `stall-timeout`.
    case stalled = "stalled"
    /// The principal has `max-tunnels-per-principal` tunnels open already.
    case tunnelLimit = "tunnel-limit"
    /// The audit trail's queue is full (the disk stalls): new connections are refused and,
    /// to keep memory bounded, counted instead of recorded one by one.
    case auditBacklog = "audit-backlog"
    case headerTimeout = "header-timeout"
    case idleTimeout = "idle-timeout"
    case clientReset = "client-reset"
    case shutdown = "shutdown"
    case internalError = "internal-error"

    // The trail's own bookkeeping.
    /// The close row written at start for a stream a relay left open when it stopped
    /// without recording the stream's end (killed, crashed, power lost).
    case relayCrashed = "relay-crashed"
    /// Rows the trail gave up while it could not write: the summary that counts them, and
    /// close rows written again once it can.
    case auditLost = "audit-lost"

    /// What a refusal's body tells the client: the code itself, except that a wrong password
    /// and an unknown account both read `auth-failed`, so that a 407 cannot be used to find
    /// out which accounts exist (the audit row keeps them apart).
    public var clientText: String {
        switch self {
        case .badPassword, .unknownUser: return "auth-failed"
        default: return rawValue
        }
    }

    /// The HTTP status a refusal with this reason is answered with, or nil when the
    /// reason never produces a response (normal closes, timeouts after the head).
    public var refusalStatus: Int? {
        switch self {
        case .allowed, .clientClosed, .upstreamClosed, .completed, .answeredByRelay, .relayStatus, .relayConfig,
             .idleTimeout, .clientReset,
             .shutdown, .upstreamReset, .relayCrashed, .auditLost, .stalled,
             .tlsVersionRefused, .sniMismatch, .sniMissing, .tlsRequired, .badTLSHandshake, .tlsInspectionTimeout,
             .tlsInspectionOverflow, .notTLS, .clientTLSFailed, .clientTLSTruncated:
            return nil
        case .badRequestLine, .badHeader, .bareLineEnding, .obsFold,
             .ambiguousFraming, .duplicateContentLength, .badContentLength, .badChunk,
             .badTarget, .ambiguousHost, .notAProxyRequest, .missingHost, .badTransferEncoding:
            return 400
        case .methodNotAllowed: return 405
        case .headTooLarge: return 431
        case .tooManyHeaders: return 431
        case .unsupportedTransferEncoding, .unsupportedScheme: return 501
        case .unsupportedVersion: return 505
        // A request under `auth client-cert` alone without a certificate: no header can
        // fix it (a 407 would need a challenge to offer), only a new TLS connection can.
        case .notRegistered, .denied, .guardedAddress, .relayLoop, .clientCertRequired: return 403
        case .authRequired, .authContinue, .badPassword, .unknownUser, .staleNonce, .replayedNonce,
             .unsupportedAuth, .gssError:
            return 407
        case .badCredentials: return 400
        case .lockedOut, .tooManyAttempts, .tunnelLimit, .sourceLimit: return 429
        case .authUnavailable: return 503
        case .resolveFailed, .upstreamRefused, .upstreamUnreachable, .badUpstreamResponse: return 502
        case .upstreamCertUntrusted, .upstreamCertExpired, .upstreamCertHostMismatch, .upstreamTLSVersion,
             .tlsSecurityLevel, .upstreamTLSFailed:
            return 502
        case .upstreamTimeout: return 504
        case .overloaded, .auditBacklog, .outOfDescriptors: return 503
        case .headerTimeout: return 408
        case .internalError: return 500
        }
    }
}
