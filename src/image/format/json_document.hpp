// SPDX-License-Identifier: Apache-2.0
// Internal to image/: bounded JSON parsing and typed field access for the
// documents of an image (manifests, indexes, configs, manifest.json). Every
// error names the document (`what`) and the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "nps/base/result.hpp"

namespace nps::image::detail {

// Parses `text` (at most max_bytes, nesting at most limits::kMaxImageJsonDepth,
// valid UTF-8); the top level must be an object (or, with
// TopLevel::object_or_array, an array).
enum class TopLevel { object, object_or_array };
Result<nlohmann::json> parse_json_document(std::string_view text, std::size_t max_bytes, std::string_view what,
                                           TopLevel top = TopLevel::object);

// Field readers over an object. `path` names the field in errors
// ("config.Env"). Absent or null → nullopt, wrong type → error.
class Fields {
public:
    Fields(const nlohmann::json& object, std::string what, std::string path_prefix = {})
        : object_(object), what_(std::move(what)), prefix_(std::move(path_prefix)) {}

    Result<std::optional<std::string>> string(const char* key, std::size_t max_bytes) const;
    Result<std::string> required_string(const char* key, std::size_t max_bytes) const;
    Result<std::optional<std::int64_t>> integer(const char* key) const;  // non-negative, int64
    Result<std::optional<std::vector<std::string>>> strings(const char* key, std::size_t max_items,
                                                            std::size_t max_bytes) const;
    // The member, when present and not null; an error when it is not of the asked kind.
    Result<const nlohmann::json*> object(const char* key) const;
    Result<const nlohmann::json*> array(const char* key, std::size_t max_items) const;

    Error fail(const std::string& key, const std::string& why) const;

private:
    const nlohmann::json* find(const char* key) const;

    const nlohmann::json& object_;
    std::string what_;
    std::string prefix_;
};

// A string for the sandbox: no NUL bytes.
bool has_nul(std::string_view s);

}  // namespace nps::image::detail
