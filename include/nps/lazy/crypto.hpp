// SPDX-License-Identifier: Apache-2.0
// The libcrypto (OpenSSL) functions nps-runner calls, spelled sym_<name>:
// libcrypto is not linked but opened with dlopen(3) on first use
// (src/lazy/lazy_library.hpp, docs/startup.md). Statically linked it cost
// every nps-runner process ~0.5 ms of CPU at start (its relocations and
// constructors), though `run`, `version` and most verbs never hash.
// sym_<name> has OpenSSL's own prototype of <name>; when libcrypto or the
// symbol cannot be loaded (reported once on stderr) it returns OpenSSL's
// failure value: nullptr, 0, and for sym_CRYPTO_memcmp "different" (a
// comparison of secrets fails closed).
// A libcrypto function called without the prefix is an undefined symbol
// when linking: declare it here and define it in src/lazy/crypto_symbols.cpp.
#pragma once

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

decltype(::CRYPTO_memcmp) sym_CRYPTO_memcmp;
decltype(::EVP_sha256) sym_EVP_sha256;
decltype(::EVP_Digest) sym_EVP_Digest;
decltype(::EVP_MD_CTX_new) sym_EVP_MD_CTX_new;
decltype(::EVP_MD_CTX_free) sym_EVP_MD_CTX_free;
decltype(::EVP_DigestInit_ex) sym_EVP_DigestInit_ex;
decltype(::EVP_DigestUpdate) sym_EVP_DigestUpdate;
decltype(::EVP_DigestFinal_ex) sym_EVP_DigestFinal_ex;
decltype(::HMAC) sym_HMAC;
decltype(::EVP_PKEY_new_raw_public_key) sym_EVP_PKEY_new_raw_public_key;
decltype(::EVP_PKEY_new_raw_private_key) sym_EVP_PKEY_new_raw_private_key;
decltype(::EVP_PKEY_get_raw_public_key) sym_EVP_PKEY_get_raw_public_key;
decltype(::EVP_PKEY_free) sym_EVP_PKEY_free;
decltype(::EVP_DigestSignInit) sym_EVP_DigestSignInit;
decltype(::EVP_DigestSign) sym_EVP_DigestSign;
decltype(::EVP_DigestVerifyInit) sym_EVP_DigestVerifyInit;
decltype(::EVP_DigestVerify) sym_EVP_DigestVerify;
