#if canImport(Glibc)
import Glibc
#endif
import CBenchOpenSSL

/// One client connection owned by one thread: a blocking descriptor, and the TLS session
/// running on it when the route asks for one. Reads and writes go through TLS once it has
/// started, straight to the socket before.
final class ClientStream {
    let fd: Int32
    private(set) var ssl: OpaquePointer?

    init(fd: Int32) {
        self.fd = fd
    }

    deinit { shut() }

    /// Runs a client handshake on the descriptor. `session` resumes an earlier one;
    /// `serverName` goes into the ClientHello's SNI.
    func startTLS(_ context: TLSContext, serverName: String?, session: OpaquePointer?) throws {
        precondition(ssl == nil, "one TLS layer per stream: TLS inside TLS needs BIO pairs")
        guard let ssl = SSL_new(context.context) else { throw TLSError.drain("SSL_new") }
        self.ssl = ssl
        guard SSL_set_fd(ssl, fd) == 1 else { throw TLSError.drain("SSL_set_fd") }
        if let serverName, CBench_SSL_set_tlsext_host_name(ssl, serverName) != 1 {
            throw TLSError.drain("set SNI \(serverName)")
        }
        if let session { _ = SSL_set_session(ssl, session) }
        let result = SSL_connect(ssl)
        guard result == 1 else {
            throw TLSError.drain("TLS handshake", sslError: SSL_get_error(ssl, result))
        }
    }

    /// True when the last handshake resumed a session instead of running in full.
    var resumed: Bool { ssl.map { SSL_session_reused($0) == 1 } ?? false }

    /// The session to resume next time (a new reference the caller frees), if the server
    /// issued a resumable one; TLS 1.3 tickets arrive after the handshake, so call this
    /// after the first read.
    func resumableSession() -> OpaquePointer? {
        guard let ssl, let session = SSL_get1_session(ssl) else { return nil }
        if SSL_SESSION_is_resumable(session) == 1 { return session }
        SSL_SESSION_free(session)
        return nil
    }

    func writeAll(_ buffer: UnsafeRawBufferPointer) throws {
        guard let ssl else { return try Socket.writeAll(fd, buffer) }
        var offset = 0
        while offset < buffer.count {
            let chunk = Int32(min(buffer.count - offset, Int(Int32.max)))
            let n = SSL_write(ssl, buffer.baseAddress! + offset, chunk)
            guard n > 0 else { throw TLSError.drain("SSL_write", sslError: SSL_get_error(ssl, n)) }
            offset += Int(n)
        }
    }

    /// Up to `buffer.count` bytes; 0 at the end of the stream.
    func readSome(_ buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let ssl else {
            while true {
                let n = read(fd, buffer.baseAddress!, buffer.count)
                if n >= 0 { return n }
                if errno != EINTR { throw SocketError(operation: "read") }
            }
        }
        let n = SSL_read(ssl, buffer.baseAddress!, Int32(min(buffer.count, Int(Int32.max))))
        if n > 0 { return Int(n) }
        let error = SSL_get_error(ssl, n)
        if error == SSL_ERROR_ZERO_RETURN { return 0 }
        throw TLSError.drain("SSL_read", sslError: error)
    }

    func readExact(_ buffer: UnsafeMutableRawBufferPointer) throws {
        var offset = 0
        while offset < buffer.count {
            let n = try readSome(UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]))
            if n == 0 { throw SocketError(operation: "read: unexpected EOF", code: ECONNRESET) }
            offset += n
        }
    }

    /// Sends close_notify without waiting for the peer's, frees the session, closes the
    /// descriptor. Idempotent.
    func shut() {
        if let ssl {
            _ = SSL_shutdown(ssl)
            SSL_free(ssl)
            self.ssl = nil
        }
        if fd >= 0, !closed {
            close(fd)
            closed = true
        }
    }

    private var closed = false
}
