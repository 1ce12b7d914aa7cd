// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/callback_signature.hpp"

#include "nps/base/digest.hpp"
#include "nps/lazy/crypto.hpp"
#include "nps/proto/error_codes.hpp"

namespace nps::proto {

namespace {

constexpr std::string_view kPrefix = "sha256=";

}  // namespace

Result<std::string> decode_callback_secret(std::string_view secret_base64url)
{
    auto key = base64url_decode(secret_base64url);
    if (!key)
        return protocol_error(code::kNopCallbackInvalid, "callback_secret: not valid base64url");
    if (key->size() != kCallbackSecretBytes)
        return protocol_error(code::kNopCallbackInvalid, "callback_secret: decodes to " + std::to_string(key->size()) +
                                                             " bytes, expected " +
                                                             std::to_string(kCallbackSecretBytes));
    return std::move(*key);
}

Result<std::string> sign_callback_body(std::string_view secret_base64url, std::string_view raw_body)
{
    const std::string key = NPS_TRY(decode_callback_secret(secret_base64url));
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    static constexpr unsigned char kEmpty = 0;  // HMAC wants a non-null data pointer
    const auto* data = raw_body.empty() ? &kEmpty : reinterpret_cast<const unsigned char*>(raw_body.data());
    if (sym_HMAC(sym_EVP_sha256(), key.data(), static_cast<int>(key.size()), data, raw_body.size(), mac, &mac_len) ==
        nullptr)
        return internal_error("callback signature: HMAC-SHA256 failed");
    return std::string(kPrefix) + to_hex(std::string_view(reinterpret_cast<const char*>(mac), mac_len));
}

Result<void> verify_callback_signature(std::string_view secret_base64url, std::string_view raw_body,
                                       std::optional<std::string_view> signature)
{
    if (!signature || signature->empty())
        return protocol_error(code::kNopCallbackHmacMissing, "callback signature: no X-NPS-Signature header");
    const std::string expected = NPS_TRY(sign_callback_body(secret_base64url, raw_body));
    if (signature->size() != expected.size() ||
        sym_CRYPTO_memcmp(signature->data(), expected.data(), expected.size()) != 0)
        return protocol_error(code::kNopCallbackHmacInvalid,
                              "callback signature: X-NPS-Signature does not match the body");
    return {};
}

}  // namespace nps::proto
