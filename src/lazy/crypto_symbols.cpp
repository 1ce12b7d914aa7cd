// SPDX-License-Identifier: Apache-2.0
// The sym_ functions of nps/lazy/crypto.hpp: each resolves libcrypto's
// function of the same name on first use (lazy_library.hpp) and forwards to
// it.
#include "lazy_library.hpp"
#include "nps/lazy/crypto.hpp"

namespace {

nps::lazy::LazyLibrary g_crypto("libcrypto.so.3");

}  // namespace

#define NPS_CRYPTO(name) static auto* const real = nps::lazy::resolve<decltype(::name)>(g_crypto, #name)

#pragma GCC visibility push(hidden)
// Non-zero ("different") when libcrypto cannot be loaded: no secret matches.
int sym_CRYPTO_memcmp(const void* a, const void* b, size_t len)
{
    NPS_CRYPTO(CRYPTO_memcmp);
    return real ? real(a, b, len) : 1;
}

const EVP_MD* sym_EVP_sha256(void)
{
    NPS_CRYPTO(EVP_sha256);
    return real ? real() : nullptr;
}

int sym_EVP_Digest(const void* data, size_t count, unsigned char* md, unsigned int* size, const EVP_MD* type,
                   ENGINE* impl)
{
    NPS_CRYPTO(EVP_Digest);
    return real ? real(data, count, md, size, type, impl) : 0;
}

EVP_MD_CTX* sym_EVP_MD_CTX_new(void)
{
    NPS_CRYPTO(EVP_MD_CTX_new);
    return real ? real() : nullptr;
}

void sym_EVP_MD_CTX_free(EVP_MD_CTX* ctx)
{
    NPS_CRYPTO(EVP_MD_CTX_free);
    if (real)
        real(ctx);
}

int sym_EVP_DigestInit_ex(EVP_MD_CTX* ctx, const EVP_MD* type, ENGINE* impl)
{
    NPS_CRYPTO(EVP_DigestInit_ex);
    return real ? real(ctx, type, impl) : 0;
}

int sym_EVP_DigestUpdate(EVP_MD_CTX* ctx, const void* data, size_t count)
{
    NPS_CRYPTO(EVP_DigestUpdate);
    return real ? real(ctx, data, count) : 0;
}

int sym_EVP_DigestFinal_ex(EVP_MD_CTX* ctx, unsigned char* md, unsigned int* size)
{
    NPS_CRYPTO(EVP_DigestFinal_ex);
    return real ? real(ctx, md, size) : 0;
}

unsigned char* sym_HMAC(const EVP_MD* evp_md, const void* key, int key_len, const unsigned char* data,
                        size_t data_len, unsigned char* md, unsigned int* md_len)
{
    NPS_CRYPTO(HMAC);
    return real ? real(evp_md, key, key_len, data, data_len, md, md_len) : nullptr;
}

EVP_PKEY* sym_EVP_PKEY_new_raw_public_key(int type, ENGINE* e, const unsigned char* pub, size_t len)
{
    NPS_CRYPTO(EVP_PKEY_new_raw_public_key);
    return real ? real(type, e, pub, len) : nullptr;
}

EVP_PKEY* sym_EVP_PKEY_new_raw_private_key(int type, ENGINE* e, const unsigned char* priv, size_t len)
{
    NPS_CRYPTO(EVP_PKEY_new_raw_private_key);
    return real ? real(type, e, priv, len) : nullptr;
}

int sym_EVP_PKEY_get_raw_public_key(const EVP_PKEY* pkey, unsigned char* pub, size_t* len)
{
    NPS_CRYPTO(EVP_PKEY_get_raw_public_key);
    return real ? real(pkey, pub, len) : 0;
}

void sym_EVP_PKEY_free(EVP_PKEY* pkey)
{
    NPS_CRYPTO(EVP_PKEY_free);
    if (real)
        real(pkey);
}

int sym_EVP_DigestSignInit(EVP_MD_CTX* ctx, EVP_PKEY_CTX** pctx, const EVP_MD* type, ENGINE* e, EVP_PKEY* pkey)
{
    NPS_CRYPTO(EVP_DigestSignInit);
    return real ? real(ctx, pctx, type, e, pkey) : 0;
}

int sym_EVP_DigestSign(EVP_MD_CTX* ctx, unsigned char* sigret, size_t* siglen, const unsigned char* tbs,
                       size_t tbslen)
{
    NPS_CRYPTO(EVP_DigestSign);
    return real ? real(ctx, sigret, siglen, tbs, tbslen) : 0;
}

int sym_EVP_DigestVerifyInit(EVP_MD_CTX* ctx, EVP_PKEY_CTX** pctx, const EVP_MD* type, ENGINE* e, EVP_PKEY* pkey)
{
    NPS_CRYPTO(EVP_DigestVerifyInit);
    return real ? real(ctx, pctx, type, e, pkey) : 0;
}

int sym_EVP_DigestVerify(EVP_MD_CTX* ctx, const unsigned char* sigret, size_t siglen, const unsigned char* tbs,
                         size_t tbslen)
{
    NPS_CRYPTO(EVP_DigestVerify);
    return real ? real(ctx, sigret, siglen, tbs, tbslen) : 0;
}
#pragma GCC visibility pop
