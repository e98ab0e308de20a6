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

/// Opens tunnels with TLS for one client thread (owned by that thread alone), keeping the
/// session it resumes. Nothing here is shared between threads but the context.
final class TLSTunnelClient {
    private let settings: TLSClientSettings
    private let route: Route
    private var session: OpaquePointer?
    /// Handshakes that resumed, and all handshakes, for the result line.
    private(set) var resumed = 0
    private(set) var handshakes = 0

    init(_ settings: TLSClientSettings, route: Route) {
        self.settings = settings
        self.route = route
    }

    deinit {
        if let session { SSL_SESSION_free(session) }
    }

    /// connect, [TLS to the proxy], [CONNECT], [preamble, TLS to the upstream]: a stream
    /// ready for payload. `stopAfterProxyHandshake` returns right after the proxy's handshake.
    func open(stopAfterProxyHandshake: Bool = false) throws -> ClientStream {
        let stream = ClientStream(fd: try Socket.connect(to: route.dial))
        do {
            if settings.proxyTLS {
                try handshake(stream, serverName: nil)
                if stopAfterProxyHandshake { return stream }
            }
            if let target = route.connectTarget {
                try Socket.sendConnect(target, over: stream)
            }
            if settings.upstreamTLS {
                if settings.preamble {
                    try [UInt8(ascii: "P")].withUnsafeBytes { try stream.writeAll($0) }
                }
                try handshake(stream, serverName: settings.serverName)
            }
            return stream
        } catch {
            stream.shut()
            throw error
        }
    }

    /// One full exchange (open, 64 bytes echoed, close) whose only purpose is a session to
    /// resume: TLS 1.3 tickets are read with the first application data.
    func primeSession() throws {
        guard settings.resume, session == nil else { return }
        let stream = try open()
        defer { stream.shut() }
        let message = [UInt8](repeating: UInt8(ascii: "E"), count: 64)
        var reply = [UInt8](repeating: 0, count: 64)
        try message.withUnsafeBytes { try stream.writeAll($0) }
        try reply.withUnsafeMutableBytes { try stream.readExact($0) }
        session = stream.resumableSession()
        guard session != nil else {
            throw TLSError(description: "the server issued no resumable session (\(settings.version))")
        }
        resumed = 0
        handshakes = 0
    }

    private func handshake(_ stream: ClientStream, serverName: String?) throws {
        try stream.startTLS(settings.context, serverName: serverName, session: settings.resume ? session : nil)
        handshakes += 1
        if stream.resumed { resumed += 1 }
    }
}
