#if canImport(Glibc)
import Glibc
#endif
import CBenchOpenSSL

/// Where TLS runs on a route, from `--proxy-tls`, `--upstream-tls` and their options; nil
/// when neither is given, so the plain paths stay untouched.
struct TLSClientSettings: Sendable {
    /// TLS to the proxy itself (an HTTPS proxy, or haproxy `bind … ssl`).
    let proxyTLS: Bool
    /// End-to-end TLS to the upstream inside the tunnel (what tunnel inspection reads).
    let upstreamTLS: Bool
    let version: TLSBenchVersion
    /// Resume each client thread's session instead of a full handshake per connection.
    let resume: Bool
    /// `rate` only: count a connection once the proxy handshake is done, then close it.
    let handshakeOnly: Bool
    /// One cleartext byte (`P`) before the end-to-end handshake: the relay sees a tunnel
    /// that does not open with TLS, so it carries the same TLS session uninspected.
    let preamble: Bool
    /// SNI of the end-to-end handshake (the proxy handshake sends none).
    let serverName: String?
    let context: TLSContext

    init?(_ options: Options) throws {
        proxyTLS = options.flag("proxy-tls")
        upstreamTLS = options.flag("upstream-tls")
        guard proxyTLS || upstreamTLS else {
            for flag in ["resume", "handshake-only", "preamble"] where options.flag(flag) {
                throw UsageError(message: "--\(flag) needs --proxy-tls or --upstream-tls")
            }
            return nil
        }
        if proxyTLS && upstreamTLS {
            throw UsageError(message: "--proxy-tls and --upstream-tls together would need TLS inside TLS")
        }
        let versionText = try options.string("tls-version", default: "1.3")
        guard let version = TLSBenchVersion(rawValue: versionText) else {
            throw UsageError(message: "--tls-version must be 1.2 or 1.3, not \(versionText)")
        }
        self.version = version
        resume = options.flag("resume")
        handshakeOnly = options.flag("handshake-only")
        preamble = options.flag("preamble")
        if handshakeOnly && !proxyTLS {
            throw UsageError(message: "--handshake-only measures the proxy's own handshake: it needs --proxy-tls")
        }
        if preamble && !upstreamTLS {
            throw UsageError(message: "--preamble precedes the end-to-end handshake: it needs --upstream-tls")
        }
        serverName = options.optionalString("sni")
        context = try TLSContext.client(version: version)
    }
}
