#include <gssapi/gssapi.h>
#include <gssapi/gssapi_krb5.h>

// GSS_C_NO_* and GSS_ERROR are casts and expression macros the importer drops (trap 6).
static inline gss_ctx_id_t CBenchGSS_noContext(void) { return GSS_C_NO_CONTEXT; }
static inline gss_cred_id_t CBenchGSS_noCredential(void) { return GSS_C_NO_CREDENTIAL; }
static inline gss_channel_bindings_t CBenchGSS_noChannelBindings(void) { return GSS_C_NO_CHANNEL_BINDINGS; }
static inline int CBenchGSS_isError(OM_uint32 major) { return GSS_ERROR(major) != 0; }

// SPNEGO (1.3.6.1.5.5.2), the mechanism browsers and curl put in a Negotiate header.
static inline gss_OID CBenchGSS_spnego(void) {
    static gss_OID_desc spnego = { 6, (void *)"\x2b\x06\x01\x05\x05\x02" };
    return &spnego;
}

// An extern object pointer: read it through a function so Swift 6 sees no mutable global.
static inline gss_OID CBenchGSS_hostbasedService(void) { return GSS_C_NT_HOSTBASED_SERVICE; }
