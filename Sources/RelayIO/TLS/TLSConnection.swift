import COpenSSL
import Glibc

/// One TLS stream over a connected non-blocking socket: the handshake, reads and writes as
/// single non-blocking steps that say what they wait for, and what the handshake settled
/// (version, cipher, SNI, client identity, resumption). It never blocks and never closes
/// the descriptor, which stays its owner's (a `StreamSocket`, a relay).
///
/// Loop-confined, like the socket under it: made and used on one loop's thread, not
/// `Sendable`. Every call starts from an empty OpenSSL error queue (the queue is per
/// thread, and a stale entry would be read as this call's cause).
public final class TLSConnection {
    /// Which side this end takes.
    public enum Role: Sendable, Equatable {
        case server
        /// `host` (a name, or an address without brackets) is sent as SNI unless it is an
        /// address, and checked against the certificate as a name or an address; `port`
        /// completes the session cache key.
        case client(host: String, port: UInt16)
    }

    /// Where the records travel.
    private enum Transport {
        case socket(Int32)
        /// Two memory buffers the owner moves ciphertext through (`TLSConnection+MemoryTransport`).
        case memory
    }

    /// The socket under the stream, which its owner closes; -1 over memory buffers.
    public let fd: Int32
    /// The side this end takes.
    public let role: Role
    private let context: TLSContext
    private let hooks: TLSConnectionHooks
    private var ssl: OpaquePointer?
    /// A fatal error was reported: OpenSSL allows no further I/O, close_notify included.
    private var failed = false
    /// The last read wanted more from the socket: whatever OpenSSL still holds is part of a
    /// record, which only the socket can complete.
    private var lastReadWantedInput = false
    /// Over a socket, OpenSSL reads ahead up to this much per system call: about four full
    /// records, where reading record by record costs a call for each header and each body.
    static let readAheadBytes = 64 * 1024

    /// Prepares a TLS stream over `fd` (connected, non-blocking); nothing is sent until
    /// `handshake()`. The role must match the context's.
    public convenience init(fd: Int32, context: TLSContext, role: Role) throws(TLSSetupError) {
        try self.init(transport: .socket(fd), context: context, role: role)
    }

    /// Prepares a TLS stream whose records go through memory buffers instead of a socket,
    /// for TLS over a stream that is not a descriptor of its own (TLS inside a tunnel that
    /// is itself TLS): the owner feeds what the transport delivers to
    /// `receiveCiphertext(_:)` and sends what `takeCiphertext(maxBytes:)` returns.
    public convenience init(memoryTransportWith context: TLSContext, role: Role) throws(TLSSetupError) {
        try self.init(transport: .memory, context: context, role: role)
    }

    private init(transport: Transport, context: TLSContext, role: Role) throws(TLSSetupError) {
        switch (role, context.role) {
        case (.server, .server), (.client, .client): break
        default: preconditionFailure("a \(role) connection from a \(context.role) context")
        }
        if case .socket(let fd) = transport { self.fd = fd } else { self.fd = -1 }
        self.role = role
        self.context = context
        var sessionKey: String?
        if case .client(let host, let port) = role { sessionKey = "\(host.lowercased()):\(port)" }
        hooks = TLSConnectionHooks(sessionCache: context.sessionCache, sessionKey: sessionKey)
        ERR_clear_error()
        guard let ssl = SSL_new(context.handle) else { throw TLSSetupError(.openSSL, "cannot create a TLS connection") }
        self.ssl = ssl
        hooks.attach(to: ssl)
        switch transport {
        case .socket(let fd):
            guard SSL_set_fd(ssl, fd) == 1 else { throw TLSSetupError(.openSSL, "cannot attach a TLS connection to its socket") }
            SSL_set_read_ahead(ssl, 1)
            SSL_set_default_read_buffer_len(ssl, Self.readAheadBytes)
        case .memory:
            guard let input = BIO_new(BIO_s_mem()) else { throw TLSSetupError(.openSSL, "cannot create a memory BIO") }
            guard let output = BIO_new(BIO_s_mem()) else {
                BIO_free(input)
                throw TLSSetupError(.openSSL, "cannot create a memory BIO")
            }
            SSL_set_bio(ssl, input, output)
        }
        switch role {
        case .server:
            SSL_set_accept_state(ssl)
        case .client(let host, _):
            SSL_set_connect_state(ssl)
            try prepareClient(ssl, host: host, sessionKey: sessionKey!)
        }
    }

    deinit {
        free()
    }

    private func prepareClient(_ ssl: OpaquePointer, host: String, sessionKey: String) throws(TLSSetupError) {
        let isAddress = Self.isIPLiteral(host)
        if !isAddress {
            guard crelay_SSL_set_tlsext_host_name(ssl, host) == 1 else {
                throw TLSSetupError(.openSSL, "cannot set the server name \(host)")
            }
        }
        if context.verifiesPeer {
            let set = isAddress ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) : SSL_set1_host(ssl, host)
            guard set == 1 else { throw TLSSetupError(.openSSL, "cannot check certificates against \(host)") }
        }
        if let cache = context.sessionCache, let session = cache.session(for: sessionKey) {
            SSL_set_session(ssl, session)
            SSL_SESSION_free(session)
        }
    }

    static func isIPLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    // MARK: Non-blocking steps

    /// One handshake step.
    public func handshake() -> TLSHandshakeResult {
        guard let ssl = liveSSL else { return .failed(TLSFailure(.other, detail: "the connection was freed or failed")) }
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            hooks.detachHeaderWatch(from: ssl)
            return .done
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case let code:
            let failure = failure(code)
            if case .client = role, let key = hooks.sessionKey { context.sessionCache?.remove(key) }
            return .failed(failure)
        }
    }

    /// One read of cleartext into `buffer`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSReadResult {
        guard let ssl = liveSSL else { return .failed(TLSFailure(.other, detail: "the connection was freed or failed")) }
        guard buffer.count > 0 else { return .bytes(0) }
        ERR_clear_error()
        let result = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if result > 0 {
            lastReadWantedInput = false
            return .bytes(Int(result))
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ:
            lastReadWantedInput = true
            return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return hooks.receivedCloseNotify ? .closed : .eof
        case let code: return .failed(failure(code))
        }
    }

    /// One write of `bytes` (or a part of them).
    public func write(_ bytes: UnsafeRawBufferPointer) -> TLSWriteResult {
        guard let ssl = liveSSL else { return .failed(TLSFailure(.other, detail: "the connection was freed or failed")) }
        guard bytes.count > 0 else { return .wrote(0) }
        ERR_clear_error()
        let result = SSL_write(ssl, bytes.baseAddress, Int32(clamping: bytes.count))
        if result > 0 { return .wrote(Int(result)) }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case let code: return .failed(failure(code))
        }
    }

    /// True when OpenSSL holds input the socket will not announce again: decrypted bytes, or
    /// whole records it read ahead. A reader that stops before `.wantRead` must come back for
    /// it by itself. After a `.wantRead` what is held is part of a record, which only the
    /// socket can complete: coming back for it would spin the loop until the rest arrives.
    public var hasBufferedInput: Bool {
        guard let ssl = liveSSL else { return false }
        return SSL_pending(ssl) > 0 || (!lastReadWantedInput && SSL_has_pending(ssl) == 1)
    }

    /// Sends close_notify once, best effort and without waiting for the peer's: the write
    /// side of the stream ends (reading goes on). Does nothing after a fatal error. The
    /// caller shuts the socket's write side down after it if it wants a FIN too.
    ///
    /// Returns false while the alert waits for the socket to take it (call again once
    /// writable, before any FIN, or the peer reads a cut instead of an end); true once it is
    /// out, or there is nothing more to do.
    @discardableResult
    public func shutdown() -> Bool {
        guard let ssl = liveSSL else { return true }
        ERR_clear_error()
        let result = SSL_shutdown(ssl)
        let pending = result < 0 && SSL_get_error(ssl, result) == SSL_ERROR_WANT_WRITE
        ERR_clear_error()
        return !pending
    }

    /// Releases the OpenSSL state (idempotent); the descriptor stays open.
    public func free() {
        guard let ssl else { return }
        SSL_free(ssl)
        self.ssl = nil
    }

    private var liveSSL: OpaquePointer? { failed ? nil : ssl }

    /// The `SSL`, for the read-only accessors (`TLSConnection+Session.swift`).
    var handle: OpaquePointer? { ssl }

    var contextVerifiesPeer: Bool { context.verifiesPeer }

    /// A fatal error's failure; marks the connection failed.
    private func failure(_ code: Int32) -> TLSFailure {
        let cause = errno
        let errors = OpenSSLErrorStack.drain()
        failed = true
        let verifyResult = context.verifiesPeer && ssl != nil ? SSL_get_verify_result(ssl) : Int(X509_V_OK)
        let classifier = TLSFailureClassifier(isServer: role == .server, allowsLegacy: context.protocols.allowsLegacy,
                                              verifyResult: verifyResult, alertReceived: hooks.alertReceived,
                                              alertSent: hooks.alertSent, firstRecordIsNotTLS: hooks.firstRecordIsNotTLS)
        let classified = classifier.classify(errors, errno: code == SSL_ERROR_SYSCALL ? cause : 0)
        guard classified.kind == .other, errors.entries.isEmpty else { return classified }
        // No OpenSSL error: the socket failed, or the peer closed it mid-handshake.
        let socket = code == SSL_ERROR_SYSCALL && cause != 0 ? String(cString: strerror(cause)) : "the peer closed the connection"
        return TLSFailure(.other, detail: "\(socket); \(classified.detail)")
    }
}
