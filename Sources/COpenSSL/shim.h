#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/hmac.h>
#include <openssl/core_names.h>
#include <openssl/provider.h>
#include <openssl/kdf.h>
