import RelayCore
import RelayIO

/// `auth client-cert`: a client certificate verified by an HTTPS listener's handshake
/// proves its connection's principal (its SAN email, else its CN), with no header and for
/// every request on the connection. Without one, the configured 407 schemes decide; with
/// none configured, the request is refused `client-cert-required` with a 403, since no
/// header can fix it and only a new connection presenting a certificate can.
enum ClientCertificateAuth {
    /// The scheme recorded for a principal proven by a certificate.
    static let scheme = "client-cert"

    /// The answer when the certificate decides (granted, or refused for lack of one with no
    /// other scheme to fall back on); nil when the configured schemes decide.
    static func answer(tls: TLSConnection?, config: AuthConfig?) -> ProxyAuthOutcome? {
        guard let config, config.acceptsClientCertificate else { return nil }
        if let identity = tls?.peerCertificateIdentity {
            return .granted(AuthPrincipal(name: identity, scheme: scheme), scope: .connection)
        }
        guard config.schemes.isEmpty else { return nil }
        return .refused(ProxyAuthRefusal(reason: .clientCertRequired,
                                         detail: tls == nil ? "a plain listener carries no client certificate"
                                             : "the TLS connection presented no verified client certificate"))
    }
}
