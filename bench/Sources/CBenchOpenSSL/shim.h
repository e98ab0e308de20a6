#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/err.h>
