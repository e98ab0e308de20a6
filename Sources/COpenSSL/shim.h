#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/hmac.h>
#include <openssl/core_names.h>
#include <openssl/provider.h>
#include <openssl/kdf.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>

// OpenSSL macros the Swift importer drops (they expand to SSL_ctrl/SSL_CTX_ctrl calls,
// casts or 64-bit option bits), wrapped one each for RelayIO's TLS. Named crelay_<macro>.

static inline int crelay_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

static inline int crelay_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

static inline long crelay_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

static inline long crelay_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

/// Session ticket keys (name, HMAC and AES keys): `length` must be what the context holds
/// (80 bytes on OpenSSL 3); 1 on success.
static inline long crelay_SSL_CTX_get_tlsext_ticket_keys(SSL_CTX *ctx, unsigned char *keys, long length) {
    return SSL_CTX_get_tlsext_ticket_keys(ctx, keys, length);
}

static inline long crelay_SSL_CTX_set_tlsext_ticket_keys(SSL_CTX *ctx, unsigned char *keys, long length) {
    return SSL_CTX_set_tlsext_ticket_keys(ctx, keys, length);
}

static inline long crelay_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

/// SSL_OP_NO_TLSv1, _1_1, _1_2 or _1_3 for a wire version (0x0301…0x0304), 0 for others:
/// how a version set with a gap (1.0 and 1.2 without 1.1) is expressed between min and max.
static inline uint64_t crelay_SSL_OP_NO_version(int version) {
    switch (version) {
    case TLS1_VERSION: return SSL_OP_NO_TLSv1;
    case TLS1_1_VERSION: return SSL_OP_NO_TLSv1_1;
    case TLS1_2_VERSION: return SSL_OP_NO_TLSv1_2;
    case TLS1_3_VERSION: return SSL_OP_NO_TLSv1_3;
    default: return 0;
    }
}

/// What reading an empty memory BIO returns: -1 (retry: more ciphertext may come) until the
/// transport under it ends, then 0 (end of stream).
static inline long crelay_BIO_set_mem_eof_return(BIO *bio, int value) {
    return BIO_set_mem_eof_return(bio, value);
}

static inline uint64_t crelay_SSL_OP_IGNORE_UNEXPECTED_EOF(void) { return SSL_OP_IGNORE_UNEXPECTED_EOF; }

static inline uint64_t crelay_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }

static inline int crelay_ERR_GET_LIB(unsigned long code) { return ERR_GET_LIB(code); }

static inline int crelay_ERR_GET_REASON(unsigned long code) { return ERR_GET_REASON(code); }

static inline int crelay_sk_GENERAL_NAME_num(const GENERAL_NAMES *names) { return sk_GENERAL_NAME_num(names); }

/// The rfc822Name (email) of a subjectAltName entry, NULL for another kind of name: the
/// entry is a tagged union the importer cannot read.
static inline const ASN1_IA5STRING *crelay_GENERAL_NAMES_email(const GENERAL_NAMES *names, int index) {
    const GENERAL_NAME *name = sk_GENERAL_NAME_value(names, index);
    return name != NULL && name->type == GEN_EMAIL ? name->d.rfc822Name : NULL;
}

static inline void crelay_OPENSSL_free(void *pointer) { OPENSSL_free(pointer); }
