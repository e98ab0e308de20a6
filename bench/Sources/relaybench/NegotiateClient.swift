import CBenchGSSAPI

/// A Kerberos initiator for one client thread: the credentials of the ccache in
/// `KRB5CCNAME`, acquired once, and a fresh SPNEGO security context per tunnel, as a
/// browser makes per connection. After the first tunnel the service ticket comes from the
/// ccache, so the KDC is not on the measured path.
final class NegotiateInitiator {
    private var target: gss_name_t?
    private var credential: gss_cred_id_t?

    /// `host` names the service `HTTP@host` (GSS_C_NT_HOSTBASED_SERVICE).
    init(host: String) throws {
        var minor: OM_uint32 = 0
        var nameText = Array("HTTP@\(host)".utf8)
        var major = nameText.withUnsafeMutableBytes { bytes -> OM_uint32 in
            var buffer = gss_buffer_desc(length: bytes.count, value: bytes.baseAddress)
            return gss_import_name(&minor, &buffer, CBenchGSS_hostbasedService(), &target)
        }
        try Self.check(major, minor, "gss_import_name HTTP@\(host)")
        major = gss_acquire_cred(&minor, nil, GSS_C_INDEFINITE, nil, GSS_C_INITIATE, &credential, nil, nil)
        try Self.check(major, minor, "gss_acquire_cred (KRB5CCNAME)")
    }

    deinit {
        var minor: OM_uint32 = 0
        if target != nil { gss_release_name(&minor, &target) }
        if credential != nil { gss_release_cred(&minor, &credential) }
    }

    /// The first (and, without mutual authentication, only) token of a new context.
    func token() throws -> [UInt8] {
        var minor: OM_uint32 = 0
        var context = CBenchGSS_noContext()
        var output = gss_buffer_desc()
        defer {
            var ignored: OM_uint32 = 0
            if context != nil { gss_delete_sec_context(&ignored, &context, nil) }
            gss_release_buffer(&ignored, &output)
        }
        let major = gss_init_sec_context(&minor, credential, &context, target, CBenchGSS_spnego(), 0, 0,
                                         CBenchGSS_noChannelBindings(), nil, nil, &output, nil, nil)
        try Self.check(major, minor, "gss_init_sec_context")
        guard output.length > 0, let value = output.value else {
            throw ProxyAuthError(description: "gss_init_sec_context produced no token")
        }
        return Array(UnsafeRawBufferPointer(start: value, count: output.length))
    }

    private static func check(_ major: OM_uint32, _ minor: OM_uint32, _ call: String) throws {
        guard CBenchGSS_isError(major) != 0 else { return }
        throw ProxyAuthError(description: "\(call): \(status(major, GSS_C_GSS_CODE)); \(status(minor, GSS_C_MECH_CODE))")
    }

    private static func status(_ code: OM_uint32, _ type: Int32) -> String {
        var messages: [String] = []
        var context: OM_uint32 = 0
        repeat {
            var minor: OM_uint32 = 0
            var text = gss_buffer_desc()
            guard gss_display_status(&minor, code, type, nil, &context, &text) == GSS_S_COMPLETE else { break }
            if let value = text.value {
                messages.append(String(decoding: UnsafeRawBufferPointer(start: value, count: text.length), as: UTF8.self))
            }
            gss_release_buffer(&minor, &text)
        } while context != 0
        return messages.joined(separator: ", ")
    }
}
