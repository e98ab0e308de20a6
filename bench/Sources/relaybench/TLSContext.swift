#if canImport(Glibc)
import Glibc
#endif
import CBenchOpenSSL

/// One `SSL_CTX`, built once per run and shared by every thread of it (OpenSSL allows
/// concurrent `SSL_new` on a context that is no longer being configured; building one per
/// connection would measure context construction instead of handshakes).
struct TLSContext: @unchecked Sendable {
    let context: OpaquePointer

    /// A client context pinned to one protocol version. Certificates are not verified: the
    /// bench measures handshake and record cost against its own throwaway certificate.
    static func client(version: TLSBenchVersion) throws -> TLSContext {
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw TLSError.drain("SSL_CTX_new(client)")
        }
        guard CBench_SSL_CTX_set_min_proto_version(context, version.wireValue) == 1,
              CBench_SSL_CTX_set_max_proto_version(context, version.wireValue) == 1 else {
            SSL_CTX_free(context)
            throw TLSError.drain("set protocol version \(version)")
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        // One read per record instead of header then body: less client CPU on a machine
        // whose two cores the proxy under test shares.
        _ = CBench_SSL_CTX_set_read_ahead(context, 1)
        // Sessions are kept by hand per client thread (SSL_get1_session / SSL_set_session).
        _ = CBench_SSL_CTX_set_session_cache_mode(context, Int(SSL_SESS_CACHE_OFF))
        return TLSContext(context: context)
    }

    /// The TLS upstream's context: TLS 1.2 and 1.3 with OpenSSL's defaults (tickets on).
    static func server(certificate: String, key: String) throws -> TLSContext {
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw TLSError.drain("SSL_CTX_new(server)")
        }
        guard SSL_CTX_use_certificate_chain_file(context, certificate) == 1,
              SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1,
              SSL_CTX_check_private_key(context) == 1,
              CBench_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            SSL_CTX_free(context)
            throw TLSError.drain("load \(certificate) / \(key)")
        }
        let sessionContext: [UInt8] = Array("relaybench".utf8)
        _ = SSL_CTX_set_session_id_context(context, sessionContext, UInt32(sessionContext.count))
        return TLSContext(context: context)
    }
}

/// The protocol versions the bench pins a client to.
enum TLSBenchVersion: String, Sendable, CustomStringConvertible {
    case tls12 = "1.2"
    case tls13 = "1.3"

    var wireValue: Int32 { self == .tls12 ? TLS1_2_VERSION : TLS1_3_VERSION }
    var description: String { "TLS " + rawValue }
}

/// A failed OpenSSL call with the whole error queue, drained so the next call starts clean.
struct TLSError: Error, CustomStringConvertible {
    let description: String

    static func drain(_ operation: String, sslError: Int32? = nil) -> TLSError {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            let text = buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }
            reasons.append(String(decoding: text, as: UTF8.self))
        }
        var text = operation
        if let sslError { text += " (SSL_get_error \(sslError)\(sslError == SSL_ERROR_SYSCALL ? ", errno \(errno)" : ""))" }
        if !reasons.isEmpty { text += ": " + reasons.joined(separator: "; ") }
        return TLSError(description: text)
    }
}
