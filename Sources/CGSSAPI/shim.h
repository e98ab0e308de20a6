#include <gssapi/gssapi.h>
#include <gssapi/gssapi_krb5.h>
#include <gssapi/gssapi_ext.h>

// GSS-API spells its null handles and status tests as macros with casts, which the clang
// importer drops. Each helper below wraps exactly one of them so
// Swift code can say what it means instead of guessing at nil/0 equivalences.

static inline gss_cred_id_t CGSSAPI_GSS_C_NO_CREDENTIAL(void) { return GSS_C_NO_CREDENTIAL; }
static inline gss_ctx_id_t CGSSAPI_GSS_C_NO_CONTEXT(void) { return GSS_C_NO_CONTEXT; }
static inline gss_name_t CGSSAPI_GSS_C_NO_NAME(void) { return GSS_C_NO_NAME; }
static inline gss_OID CGSSAPI_GSS_C_NO_OID(void) { return GSS_C_NO_OID; }
static inline gss_OID_set CGSSAPI_GSS_C_NO_OID_SET(void) { return GSS_C_NO_OID_SET; }
static inline gss_channel_bindings_t CGSSAPI_GSS_C_NO_CHANNEL_BINDINGS(void) { return GSS_C_NO_CHANNEL_BINDINGS; }
static inline OM_uint32 CGSSAPI_GSS_C_INDEFINITE(void) { return GSS_C_INDEFINITE; }

static inline int CGSSAPI_GSS_ERROR(OM_uint32 major) { return GSS_ERROR(major) != 0; }
static inline OM_uint32 CGSSAPI_GSS_S_COMPLETE(void) { return GSS_S_COMPLETE; }
static inline OM_uint32 CGSSAPI_GSS_S_CONTINUE_NEEDED(void) { return GSS_S_CONTINUE_NEEDED; }

// The name-type and mechanism OIDs are exported variables, but a few are declared through
// macros or as `const gss_OID` in one header and plain `gss_OID` in another; returning them
// from functions keeps Swift's view of them uniform (and immune to header churn).
static inline gss_OID CGSSAPI_GSS_C_NT_HOSTBASED_SERVICE(void) { return GSS_C_NT_HOSTBASED_SERVICE; }
static inline gss_OID CGSSAPI_GSS_KRB5_NT_PRINCIPAL_NAME(void) { return GSS_KRB5_NT_PRINCIPAL_NAME; }
static inline gss_OID CGSSAPI_gss_mech_krb5(void) { return (gss_OID)gss_mech_krb5; }

// MIT exports no symbol for SPNEGO (1.3.6.1.5.5.2), the mechanism RFC 4559 clients wrap
// their Kerberos tokens in; one static copy per translation unit is harmless because GSS
// compares OIDs by value.
static inline gss_OID CGSSAPI_gss_mech_spnego(void) {
    static gss_OID_desc spnego = { 6, (void *)"\x2b\x06\x01\x05\x05\x02" };
    return &spnego;
}
