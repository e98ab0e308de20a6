extension ReasonCode {
    /// The RFC 9209 `Proxy-Status` error type of a refusal, so a client can tell the relay's
    /// own answer from the app server's behind it (a `403` or `502` from either looks the
    /// same otherwise); nil for reasons that produce no refusal, and for `407`, which only
    /// a proxy sends.
    public var proxyStatusError: String? {
        guard let status = refusalStatus, status != 407 else { return nil }
        switch self {
        case .resolveFailed: return "dns_error"
        case .upstreamRefused: return "connection_refused"
        case .upstreamUnreachable: return "destination_unavailable"
        case .upstreamTimeout: return "connection_timeout"
        case .badUpstreamResponse: return "http_protocol_error"
        case .upstreamCertUntrusted, .upstreamCertExpired, .upstreamCertHostMismatch: return "tls_certificate_error"
        case .upstreamTLSVersion, .tlsSecurityLevel, .upstreamTLSFailed: return "tls_protocol_error"
        case .relayLoop: return "proxy_loop_detected"
        case .internalError: return "proxy_internal_error"
        default:
            switch status {
            case 403, 429: return "http_request_denied"
            case 503: return "proxy_internal_response"
            default: return "http_request_error"
            }
        }
    }
}
