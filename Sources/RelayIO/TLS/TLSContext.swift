import COpenSSL

/// One OpenSSL `SSL_CTX` for one configuration (a listener's certificate, an upstream's
/// trust and versions), built at load or reload and shared by every connection made from
/// it, never built per connection (OpenSSL 3 is slow to build one and contends on locks
/// while fetching its algorithms).
///
/// Sendable because nothing changes it after `server(…)` or `client(…)` returns: the
/// builders are the only code that configures the `SSL_CTX`, connections only read it
/// (`SSL_new` takes a reference under OpenSSL's own lock), and the one mutable part a
/// connection reaches, the client session cache, sits behind a `Mutex`. So loops on several
/// threads may make connections from one context at once, and a reload swaps whole
/// contexts.
public final class TLSContext: @unchecked Sendable {  // immutable after build; see above
    /// Which side of the handshake connections from this context take.
    public enum Role: Sendable, Equatable {
        case server
        case client
    }

    let handle: OpaquePointer
    /// The side its connections take.
    public let role: Role
    /// The versions allowed.
    public let protocols: TLSProtocols
    /// Client role: verification of the server's certificate and name is on.
    public let verifiesPeer: Bool
    /// Client role: sessions kept per upstream for resumption.
    public let sessionCache: TLSSessionCache?

    init(handle: OpaquePointer, role: Role, protocols: TLSProtocols, verifiesPeer: Bool, sessionCache: TLSSessionCache?) {
        self.handle = handle
        self.role = role
        self.protocols = protocols
        self.verifiesPeer = verifiesPeer
        self.sessionCache = sessionCache
    }

    deinit {
        SSL_CTX_free(handle)
    }

    /// A new `SSL_CTX`, freed by the caller when a later step throws.
    static func makeHandle(_ method: OpaquePointer?) throws(TLSSetupError) -> OpaquePointer {
        ERR_clear_error()
        guard let method, let handle = SSL_CTX_new(method) else {
            throw TLSSetupError(.openSSL, "cannot create a TLS context")
        }
        return handle
    }

    /// What every context sets: partial writes into a buffer that may move between retries
    /// (the relay retries with what is left), buffers released while idle (a relay holds
    /// many idle streams), no renegotiation, and a TCP EOF without close_notify reported as
    /// an end of stream rather than a fatal error, so the other direction can still be
    /// written (half-close); `TLSConnection` tells the two apart by the alert.
    static func applyCommonSettings(_ handle: OpaquePointer) {
        _ = crelay_SSL_CTX_set_mode(handle, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
                                                 | SSL_MODE_RELEASE_BUFFERS))
        SSL_CTX_set_options(handle, crelay_SSL_OP_IGNORE_UNEXPECTED_EOF() | crelay_SSL_OP_NO_RENEGOTIATION())
    }
}
