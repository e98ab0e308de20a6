import CGSSAPI
import Testing

/// The client side of a Negotiate handshake, as curl or a browser runs it: alice's
/// ticket cache, a target service, SPNEGO (or raw Kerberos), mutual authentication.
final class GSSTestInitiator {
    /// How the target is named.
    enum Target {
        /// `service@host`, as curl names a proxy (`HTTP@127.0.0.1`).
        case hostBased(String)
        /// A full Kerberos principal (`HTTP/other.example.test@EXAMPLE.TEST`).
        case principal(String)
    }

    /// Which mechanism the first token speaks.
    enum Mechanism {
        case spnego
        case kerberos
    }

    private var credential: gss_cred_id_t?
    private var name: gss_name_t?
    private var context: gss_ctx_id_t? = nil
    private let mech: gss_OID
    private(set) var isComplete = false

    init(credentialCache: String, target: Target, mechanism: Mechanism = .spnego) throws {
        mech = mechanism == .spnego ? CGSSAPI_gss_mech_spnego() : CGSSAPI_gss_mech_krb5()
        var minor: OM_uint32 = 0
        let (text, type) = switch target {
        case .hostBased(let text): (text, CGSSAPI_GSS_C_NT_HOSTBASED_SERVICE())
        case .principal(let text): (text, CGSSAPI_GSS_KRB5_NT_PRINCIPAL_NAME())
        }
        var bytes = Array(text.utf8)
        let nameMajor = bytes.withUnsafeMutableBytes { raw in
            var buffer = gss_buffer_desc(length: raw.count, value: raw.baseAddress)
            return gss_import_name(&minor, &buffer, type, &name)
        }
        try #require(CGSSAPI_GSS_ERROR(nameMajor) == 0, "gss_import_name \(nameMajor)/\(minor)")

        // The ccache goes in the credential store so the test never touches KRB5CCNAME.
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
        try #require(CGSSAPI_GSS_ERROR(credMajor) == 0, "gss_acquire_cred_from \(credMajor)/\(minor)")
    }

    deinit {
        var minor: OM_uint32 = 0
        if context != nil { gss_delete_sec_context(&minor, &context, nil) }
        if name != nil { gss_release_name(&minor, &name) }
        if credential != nil { gss_release_cred(&minor, &credential) }
    }

    /// One `gss_init_sec_context` call: nil input for the first token, then the
    /// acceptor's reply. Returns the token to send (possibly empty); throws on a GSS error.
    func step(_ input: [UInt8]?) throws -> [UInt8] {
        var minor: OM_uint32 = 0
        var output = gss_buffer_desc()
        var inputBytes = input ?? []
        let flags = OM_uint32(GSS_C_MUTUAL_FLAG) | OM_uint32(GSS_C_SEQUENCE_FLAG)
        let major = inputBytes.withUnsafeMutableBytes { raw in
            var buffer = gss_buffer_desc(length: raw.count, value: raw.baseAddress)
            return withUnsafeMutablePointer(to: &buffer) { pointer in
                // GSS_C_NO_BUFFER on the first call: there is no acceptor token yet.
                gss_init_sec_context(&minor, credential, &context, name, mech, flags, 0,
                                     CGSSAPI_GSS_C_NO_CHANNEL_BINDINGS(), input == nil ? nil : pointer,
                                     nil, &output, nil, nil)
            }
        }
        let token = output.length > 0 ? Array(UnsafeRawBufferPointer(start: output.value, count: output.length)) : []
        var releaseMinor: OM_uint32 = 0
        gss_release_buffer(&releaseMinor, &output)
        guard CGSSAPI_GSS_ERROR(major) == 0 else {
            throw GSSInitiatorError(major: major, minor: minor)
        }
        isComplete = major & CGSSAPI_GSS_S_CONTINUE_NEEDED() == 0
        return token
    }
}

/// `gss_init_sec_context` refused; the raw statuses are enough for a test failure.
struct GSSInitiatorError: Error, CustomStringConvertible {
    let major: OM_uint32
    let minor: OM_uint32
    var description: String { "gss_init_sec_context failed: major \(major) minor \(minor)" }
}
