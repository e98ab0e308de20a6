import CGSSAPI
import Glibc

/// The relay's own Kerberos identity for accepting `Negotiate` proxy authentication:
/// the service keys from a keytab, acquired once per configuration and shared by every
/// connection until the configuration is replaced.
///
/// Read-only after `init`. MIT krb5 locks its credential record (`cred->lock`) inside
/// `gss_accept_sec_context`, so connections on different threads may accept with the
/// same credential concurrently.
public final class GSSAcceptorCredential: @unchecked Sendable {  // immutable after init; krb5 locks the credential
    /// The keytab the keys come from.
    public let keytabPath: String
    /// The service principal accepted, or nil for any key in the keytab.
    public let principal: String?
    /// Where accepted authenticators are remembered.
    public let replayCache: GSSReplayCache
    let handle: gss_cred_id_t

    /// Acquires acceptor credentials from `keytabPath`.
    ///
    /// - Parameters:
    ///   - principal: a Kerberos principal such as `HTTP/proxy.example.test@EXAMPLE.TEST`
    ///     (the realm defaults to krb5.conf's `default_realm`). With nil, a client may
    ///     address any principal whose key is in the keytab (`GSS_C_NO_NAME`), which is
    ///     what a relay reached under several host names wants.
    ///   - replayCache: see `GSSReplayCache`; daemons should pass a file in the state directory.
    /// - Throws: `GSSError` with code `gss-credentials` when the keytab is missing, empty,
    ///   unreadable or lacks `principal`.
    public init(keytabPath: String, principal: String? = nil, replayCache: GSSReplayCache = .libraryDefault) throws(GSSError) {
        self.keytabPath = keytabPath
        self.principal = principal
        self.replayCache = replayCache

        var desiredName = CGSSAPI_GSS_C_NO_NAME()
        if let principal {
            desiredName = try GSSAcceptorCredential.importPrincipal(principal)
        }
        defer {
            var minor: OM_uint32 = 0
            if desiredName != nil { gss_release_name(&minor, &desiredName) }
        }

        // The keytab travels in the credential store rather than KRB5_KTNAME or
        // gss_krb5_register_acceptor_identity: both are process-global and would make two
        // configurations (old and new during a reload) fight over one setting.
        var store: [(String, String)] = [("keytab", "FILE:" + keytabPath)]
        if let rcache = replayCache.credentialStoreValue { store.append(("rcache", rcache)) }
        let ownedStrings = store.map { (strdup($0.0)!, strdup($0.1)!) }
        defer { for (key, value) in ownedStrings { free(key); free(value) } }
        var elements = ownedStrings.map { gss_key_value_element_desc(key: $0.0, value: $0.1) }

        var minor: OM_uint32 = 0
        var credential = CGSSAPI_GSS_C_NO_CREDENTIAL()
        let major = elements.withUnsafeMutableBufferPointer { buffer in
            var storeDesc = gss_key_value_set_desc(count: OM_uint32(buffer.count), elements: buffer.baseAddress)
            // No mechanism set: the default set gives both raw Kerberos and SPNEGO-wrapped
            // Kerberos, and RFC 4559 clients (curl, browsers) send the latter.
            return gss_acquire_cred_from(&minor, desiredName, CGSSAPI_GSS_C_INDEFINITE(), CGSSAPI_GSS_C_NO_OID_SET(),
                                         gss_cred_usage_t(GSS_C_ACCEPT), &storeDesc, &credential, nil, nil)
        }
        guard CGSSAPI_GSS_ERROR(major) == 0, let credential else {
            throw GSSError(code: GSSError.Code.credentials, major: major, minor: minor)
        }

        // SPNEGO would otherwise offer every mechanism installed on the host (gss-ntlmssp
        // turns Negotiate into an NTLM path that bypasses our NTLM policy); the relay
        // promises Kerberos only.
        var krb5 = CGSSAPI_gss_mech_krb5()!.pointee
        let negMajor = withUnsafeMutablePointer(to: &krb5) { oid in
            var onlyKerberos = gss_OID_set_desc(count: 1, elements: oid)
            return gss_set_neg_mechs(&minor, credential, &onlyKerberos)
        }
        guard CGSSAPI_GSS_ERROR(negMajor) == 0 else {
            var releaseMinor: OM_uint32 = 0
            var doomed: gss_cred_id_t? = credential
            gss_release_cred(&releaseMinor, &doomed)
            throw GSSError(code: GSSError.Code.credentials, major: negMajor, minor: minor)
        }
        self.handle = credential
    }

    deinit {
        var minor: OM_uint32 = 0
        var doomed: gss_cred_id_t? = handle
        gss_release_cred(&minor, &doomed)
    }

    /// A Kerberos principal name (`service/host@REALM`) as a GSS name.
    private static func importPrincipal(_ principal: String) throws(GSSError) -> gss_name_t {
        var minor: OM_uint32 = 0
        var name = CGSSAPI_GSS_C_NO_NAME()
        let major = withGSSInputBuffer(Array(principal.utf8)) { buffer in
            gss_import_name(&minor, &buffer, CGSSAPI_GSS_KRB5_NT_PRINCIPAL_NAME(), &name)
        }
        guard CGSSAPI_GSS_ERROR(major) == 0, let name else {
            throw GSSError(code: GSSError.Code.credentials, major: major, minor: minor)
        }
        return name
    }
}
