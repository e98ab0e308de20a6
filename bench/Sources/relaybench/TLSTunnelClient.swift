#if canImport(Glibc)
import Glibc
#endif
import CBenchOpenSSL

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
