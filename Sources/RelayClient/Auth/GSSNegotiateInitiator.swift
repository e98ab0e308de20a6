import CGSSAPI
import RelayCore
import Synchronization

/// The initiator side of Negotiate through MIT GSS-API: `gss_init_sec_context` with the
/// user's Kerberos credential cache, for the host-based service `HTTP@host`, wrapped in
/// SPNEGO or as a bare Kerberos token.
///
/// Mutual authentication is asked for, delegation is not (the user's ticket-granting
/// ticket never leaves the machine). One initiator serves one handshake; the lock only
/// makes handing it between threads safe, it is never contended.
public final class GSSNegotiateInitiator: NegotiateInitiator {
    private struct Handles {
        var credential: gss_cred_id_t?
        var name: gss_name_t?
        var context: gss_ctx_id_t?
        var complete = false
    }

    private let handles: Mutex<Handles>
    private let mechanism: NegotiateMechanism

    /// An initiator for `HTTP@host` with the tickets in `credentialCache` (a ccache name
    /// such as `FILE:/tmp/krb5cc_1000`; nil: the default, `KRB5CCNAME`).
    public init(host: String, mechanism: NegotiateMechanism = .spnego, credentialCache: String? = nil) throws(ClientAuthError) {
        self.mechanism = mechanism
        var minor: OM_uint32 = 0
        var name: gss_name_t? = nil
        var service = Array("HTTP@\(host)".utf8)
        let nameMajor = service.withUnsafeMutableBytes { raw in
            var buffer = gss_buffer_desc(length: raw.count, value: raw.baseAddress)
            return gss_import_name(&minor, &buffer, CGSSAPI_GSS_C_NT_HOSTBASED_SERVICE(), &name)
        }
        guard CGSSAPI_GSS_ERROR(nameMajor) == 0 else {
            throw .negotiateFailed(Self.statusText(major: nameMajor, minor: minor))
        }
        var credential = CGSSAPI_GSS_C_NO_CREDENTIAL()
        if let credentialCache {
            // Through the credential store, so the process environment is left alone.
            let credMajor = "ccache".withCString { key in
                credentialCache.withCString { value in
                    var element = gss_key_value_element_desc(key: key, value: value)
                    return withUnsafeMutablePointer(to: &element) { elements in
                        var store = gss_key_value_set_desc(count: 1, elements: elements)
                        return gss_acquire_cred_from(&minor, CGSSAPI_GSS_C_NO_NAME(), CGSSAPI_GSS_C_INDEFINITE(),
                                                     CGSSAPI_GSS_C_NO_OID_SET(), gss_cred_usage_t(GSS_C_INITIATE),
                                                     &store, &credential, nil, nil)
                    }
                }
            }
            guard CGSSAPI_GSS_ERROR(credMajor) == 0 else {
                var releaseMinor: OM_uint32 = 0
                gss_release_name(&releaseMinor, &name)
                throw .noCredentials
            }
        }
        handles = Mutex(Handles(credential: credential, name: name, context: CGSSAPI_GSS_C_NO_CONTEXT()))
    }

    deinit {
        handles.withLock { handles in
            var minor: OM_uint32 = 0
            if handles.context != nil { gss_delete_sec_context(&minor, &handles.context, nil) }
            if handles.name != nil { gss_release_name(&minor, &handles.name) }
            if handles.credential != nil { gss_release_cred(&minor, &handles.credential) }
        }
    }

    /// A factory for `ClientCredentials.negotiate` using `credentialCache` (nil: default).
    public static func factory(credentialCache: String? = nil) -> NegotiateInitiatorFactory {
        { host, mechanism throws(ClientAuthError) in
            try GSSNegotiateInitiator(host: host, mechanism: mechanism, credentialCache: credentialCache)
        }
    }

    /// True once `gss_init_sec_context` reported the context complete.
    public var isComplete: Bool { handles.withLock { $0.complete } }

    /// One `gss_init_sec_context` call: nil input for the first token, then the
    /// acceptor's reply. Returns the token to send, possibly empty.
    public func step(_ input: [UInt8]?) throws(ClientAuthError) -> [UInt8] {
        let mechanism = mechanism
        let result: Result<[UInt8], ClientAuthError> = handles.withLock { handles in
            // Fetched inside: a pointer from outside the lock would tie the handles to it.
            let mech = mechanism == .spnego ? CGSSAPI_gss_mech_spnego() : CGSSAPI_gss_mech_krb5()
            guard !handles.complete else { return .failure(.negotiateFailed("the handshake is already complete")) }
            var minor: OM_uint32 = 0
            var output = gss_buffer_desc()
            var inputBytes = input ?? []
            let flags = OM_uint32(GSS_C_MUTUAL_FLAG) | OM_uint32(GSS_C_SEQUENCE_FLAG)
            let major = inputBytes.withUnsafeMutableBytes { raw in
                var buffer = gss_buffer_desc(length: raw.count, value: raw.baseAddress)
                return withUnsafeMutablePointer(to: &buffer) { pointer in
                    // No input buffer on the first call: there is no acceptor token yet.
                    gss_init_sec_context(&minor, handles.credential, &handles.context, handles.name, mech, flags, 0,
                                         CGSSAPI_GSS_C_NO_CHANNEL_BINDINGS(), input == nil ? nil : pointer,
                                         nil, &output, nil, nil)
                }
            }
            let token = output.length > 0 && output.value != nil
                ? Array(UnsafeRawBufferPointer(start: output.value, count: output.length)) : []
            var releaseMinor: OM_uint32 = 0
            gss_release_buffer(&releaseMinor, &output)
            // MIT keeps the detailed minor text per thread: read it here, on this one.
            guard CGSSAPI_GSS_ERROR(major) == 0 else {
                return .failure(.negotiateFailed(Self.statusText(major: major, minor: minor)))
            }
            handles.complete = major & CGSSAPI_GSS_S_CONTINUE_NEEDED() == 0
            return .success(token)
        }
        return try result.get()
    }

    /// `gss_display_status` lines for the major and the minor status.
    private static func statusText(major: OM_uint32, minor: OM_uint32) -> String {
        func lines(_ status: OM_uint32, _ type: Int32) -> String {
            var lines: [String] = []
            var messageContext: OM_uint32 = 0
            repeat {
                var minor: OM_uint32 = 0
                var text = gss_buffer_desc()
                let result = gss_display_status(&minor, status, type, CGSSAPI_GSS_C_NO_OID(), &messageContext, &text)
                if CGSSAPI_GSS_ERROR(result) != 0 { break }
                if text.length > 0, let value = text.value {
                    lines.append(String(decoding: UnsafeRawBufferPointer(start: value, count: text.length), as: UTF8.self))
                }
                gss_release_buffer(&minor, &text)
            } while messageContext != 0 && lines.count < 8
            return lines.isEmpty ? "status \(status)" : lines.joined(separator: "; ")
        }
        let minorText = minor == 0 ? "no mechanism detail" : lines(minor, GSS_C_MECH_CODE)
        return "\(lines(major, GSS_C_GSS_CODE)): \(minorText)"
    }
}

extension ClientCredentials {
    /// Kerberos only, through GSS-API and the tickets in `credentialCache` (nil: the
    /// default cache, `KRB5CCNAME`).
    public static func kerberos(credentialCache: String? = nil) -> ClientCredentials {
        .kerberos(GSSNegotiateInitiator.factory(credentialCache: credentialCache))
    }
}
