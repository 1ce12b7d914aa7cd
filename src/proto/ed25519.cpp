// SPDX-License-Identifier: Apache-2.0
// Ed25519 over OpenSSL 3 EVP (see nps/proto/ed25519.hpp).
#include "nps/proto/ed25519.hpp"

#include <memory>

#include "nps/base/digest.hpp"
#include "nps/lazy/crypto.hpp"

namespace nps::proto {

namespace {

constexpr std::string_view kPrefix = "ed25519:";
// DER SubjectPublicKeyInfo of an Ed25519 key (RFC 8410): this prefix, then the 32 key bytes.
constexpr std::string_view kSpkiPrefix{"\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00", 12};

struct PkeyFree {
    void operator()(EVP_PKEY* p) const { sym_EVP_PKEY_free(p); }
};
struct MdCtxFree {
    void operator()(EVP_MD_CTX* c) const { sym_EVP_MD_CTX_free(c); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

const unsigned char* bytes(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

// Either base64 alphabet, padding optional.
std::optional<std::string> decode_any_base64(std::string_view text)
{
    if (auto raw = base64url_decode(text))
        return raw;
    return base64_decode(text);
}

Result<std::string> decode_prefixed(std::string_view text, std::string_view code, std::string_view what)
{
    if (!text.starts_with(kPrefix))
        return protocol_error(std::string(code), std::string(what) + ": does not start with 'ed25519:'");
    auto raw = decode_any_base64(text.substr(kPrefix.size()));
    if (!raw)
        return protocol_error(std::string(code), std::string(what) + ": not base64url");
    return std::move(*raw);
}

}  // namespace

Result<std::string> decode_ed25519_public_key(std::string_view text, std::string_view code, std::string_view what)
{
    std::string raw = NPS_TRY(decode_prefixed(text, code, what));
    if (raw.size() == kSpkiPrefix.size() + kEd25519PublicKeyBytes && std::string_view(raw).starts_with(kSpkiPrefix))
        return raw.substr(kSpkiPrefix.size());
    if (raw.size() != kEd25519PublicKeyBytes)
        return protocol_error(std::string(code), std::string(what) + ": decodes to " + std::to_string(raw.size()) +
                                                     " bytes, neither a raw 32-byte key nor its DER form");
    return raw;
}

Result<std::string> decode_ed25519_signature(std::string_view text, std::string_view code, std::string_view what)
{
    std::string raw = NPS_TRY(decode_prefixed(text, code, what));
    if (raw.size() != kEd25519SignatureBytes)
        return protocol_error(std::string(code), std::string(what) + ": decodes to " + std::to_string(raw.size()) +
                                                     " bytes, not 64");
    return raw;
}

std::string encode_ed25519(std::string_view raw) { return std::string(kPrefix) + base64url_encode(raw); }

bool ed25519_verify(std::string_view public_key, std::string_view message, std::string_view signature)
{
    if (public_key.size() != kEd25519PublicKeyBytes || signature.size() != kEd25519SignatureBytes)
        return false;
    Pkey key(sym_EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, bytes(public_key), public_key.size()));
    MdCtx ctx(sym_EVP_MD_CTX_new());
    if (!key || !ctx)
        return false;
    if (sym_EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1)
        return false;
    static constexpr unsigned char kEmpty = 0;
    const unsigned char* data = message.empty() ? &kEmpty : bytes(message);
    return sym_EVP_DigestVerify(ctx.get(), bytes(signature), signature.size(), data, message.size()) == 1;
}

Result<std::string> ed25519_sign(std::string_view seed, std::string_view message)
{
    if (seed.size() != kEd25519SeedBytes)
        return internal_error("Ed25519 sign: the seed must be 32 bytes");
    Pkey key(sym_EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, bytes(seed), seed.size()));
    MdCtx ctx(sym_EVP_MD_CTX_new());
    if (!key || !ctx || sym_EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1)
        return internal_error("Ed25519 sign: OpenSSL could not set up the key");
    std::string sig(kEd25519SignatureBytes, '\0');
    std::size_t len = sig.size();
    static constexpr unsigned char kEmpty = 0;
    const unsigned char* data = message.empty() ? &kEmpty : bytes(message);
    if (sym_EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len, data, message.size()) != 1 ||
        len != kEd25519SignatureBytes)
        return internal_error("Ed25519 sign: OpenSSL failed to sign");
    return sig;
}

Result<std::string> ed25519_public_key(std::string_view seed)
{
    if (seed.size() != kEd25519SeedBytes)
        return internal_error("Ed25519 key: the seed must be 32 bytes");
    Pkey key(sym_EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, bytes(seed), seed.size()));
    std::string pub(kEd25519PublicKeyBytes, '\0');
    std::size_t len = pub.size();
    if (!key || sym_EVP_PKEY_get_raw_public_key(key.get(), reinterpret_cast<unsigned char*>(pub.data()), &len) != 1 ||
        len != kEd25519PublicKeyBytes)
        return internal_error("Ed25519 key: OpenSSL could not derive the public key");
    return pub;
}

}  // namespace nps::proto
