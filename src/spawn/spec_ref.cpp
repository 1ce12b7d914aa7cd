// SPDX-License-Identifier: Apache-2.0
#include "nps/spawn/spec_ref.hpp"

#include "nps/base/digest.hpp"
#include "nps/base/limits.hpp"
#include "nps/proto/nwp_url.hpp"
#include "nps/proto/url.hpp"
#include "nps/spawn/spawn_spec.hpp"
#include "spec_rules.hpp"

namespace nps::spawn {

namespace {

using detail::quote_text;

Error ref_error(std::string problem) { return protocol_error(kSpawnSpecInvalid, "spawn_spec_ref: " + problem); }

bool is_b64url_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

bool has_scheme(std::string_view ref, std::string_view scheme_with_colon)
{
    return ref.size() >= scheme_with_colon.size() &&
           proto::iequals(ref.substr(0, scheme_with_colon.size()), scheme_with_colon);
}

}  // namespace

const char* to_string(RefKind kind)
{
    switch (kind) {
    case RefKind::inline_data: return "inline";
    case RefKind::https: return "https";
    case RefKind::nwp: return "nwp";
    }
    return "unknown";
}

Result<RefKind> classify_spawn_spec_ref(std::string_view ref)
{
    if (ref.empty())
        return ref_error("empty");
    if (ref.size() > limits::kMaxSpawnSpecRefChars)
        return ref_error("longer than " + std::to_string(limits::kMaxSpawnSpecRefChars) + " characters");
    if (has_scheme(ref, kSpawnSpecScheme))
        return RefKind::inline_data;
    if (has_scheme(ref, "https:"))
        return RefKind::https;
    if (has_scheme(ref, "nwp:"))
        return RefKind::nwp;
    return ref_error(quote_text(ref) + " is neither a spawnspec: data URI nor an https:// or nwp:// URL");
}

std::optional<std::string> decode_base64url_strict(std::string_view text)
{
    std::size_t data_chars = text.size();
    while (data_chars > 0 && text[data_chars - 1] == '=')
        --data_chars;
    const std::size_t padding = text.size() - data_chars;
    if (data_chars < 2 || data_chars % 4 == 1)
        return std::nullopt;
    // Padding is optional, but when present it must complete the last quantum.
    if (padding != 0 && (padding > 2 || text.size() % 4 != 0))
        return std::nullopt;
    for (std::size_t i = 0; i < data_chars; ++i)
        if (!is_b64url_char(text[i]))
            return std::nullopt;
    return base64url_decode(text.substr(0, data_chars));  // also refuses non-zero unused bits
}

Result<std::string> decode_spawnspec_uri(std::string_view ref, std::size_t max_json_bytes)
{
    if (ref.size() > limits::kMaxSpawnSpecRefChars)
        return ref_error("longer than " + std::to_string(limits::kMaxSpawnSpecRefChars) + " characters");
    if (!has_scheme(ref, kSpawnSpecScheme))
        return ref_error("not a spawnspec: data URI");
    const std::string_view payload = ref.substr(kSpawnSpecScheme.size());
    if (payload.empty())
        return ref_error("the spawnspec: data URI has no payload");
    // A cheap bound before decoding: 4 characters carry 3 bytes.
    if (payload.size() / 4 * 3 > max_json_bytes + 3)
        return ref_error("the inline SpawnSpec is larger than " + std::to_string(max_json_bytes) + " bytes");
    auto json = decode_base64url_strict(payload);
    if (!json)
        return ref_error("the spawnspec: payload is not canonical base64url (alphabet A-Z a-z 0-9 - _, "
                         "optional '=' padding to a multiple of 4)");
    if (json->size() > max_json_bytes)
        return ref_error("the inline SpawnSpec is " + std::to_string(json->size()) + " bytes, more than " +
                         std::to_string(max_json_bytes));
    return std::move(*json);
}

std::string encode_spawnspec_uri(std::string_view json_text)
{
    return std::string(kSpawnSpecScheme) + base64url_encode(json_text);
}

Result<void> check_spawn_spec_ref_syntax(std::string_view ref)
{
    switch (NPS_TRY(classify_spawn_spec_ref(ref))) {
    case RefKind::inline_data:
        NPS_TRY(decode_spawnspec_uri(ref, limits::kMaxSpawnSpecRefChars));
        return {};
    case RefKind::https: {
        const auto parts = proto::split_url(ref);
        if (!parts || parts->host.empty())
            return ref_error(quote_text(ref) + " is not an absolute https URL with a host");
        if (parts->has_userinfo)
            return ref_error("user-info in the URL is not allowed");
        return {};
    }
    case RefKind::nwp:
        if (!proto::is_valid_nwp_url(ref))
            return ref_error(quote_text(ref) + " is not an nwp:// URL (nwp://host[:port]/node-path, segments of "
                                           "A-Z a-z 0-9 _ . -, no query)");
        return {};
    }
    return {};
}

}  // namespace nps::spawn
