// SPDX-License-Identifier: Apache-2.0
// JSON request bodies and JSON responses of the API.
//
// Request bodies are untrusted: parse_json_object() reads them with the one
// JSON reader (nps/proto/json_reader.hpp) and holds them as nlohmann-json
// values, at most limits::kMaxJsonDepth deep. Field readers fail with
// NWP-HTTP-PARAM-INVALID naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "nps/base/result.hpp"
#include "nps/net/http_server.hpp"
#include "nps/store/types.hpp"

namespace nps::api {

using Json = nlohmann::json;

// The body as a JSON object; NWP-HTTP-FRAME-BODY-MALFORMED otherwise.
Result<Json> parse_json_object(std::string_view text);

Result<std::string> required_string(const Json& object, const char* field, std::size_t max_chars);
Result<std::optional<std::string>> optional_string(const Json& object, const char* field, std::size_t max_chars);
Result<std::uint32_t> required_uint32(const Json& object, const char* field);
Result<std::optional<std::uint32_t>> optional_uint32(const Json& object, const char* field);

// An integer header or query value within [min, max]; `fallback` when
// absent (empty). NWP-HTTP-PARAM-INVALID naming `name` otherwise.
Result<std::int64_t> bounded_integer(const std::string& text, const char* name, std::int64_t fallback,
                                     std::int64_t min, std::int64_t max);

// Responses.
net::HttpResponse json_response(int status, const Json& body);
net::HttpResponse empty_response(int status);
// {"status","error","message"} with the HTTP code from the error-code table.
net::HttpResponse error_response(const Error& error);
net::HttpResponse error_response(const std::string& code, const std::string& message);
// The same body with the members of `extra` (an object) added.
net::HttpResponse error_response(const std::string& code, const std::string& message, const Json& extra);
// A stored JSON text as a value; null when absent (or, never expected, not JSON).
Json json_or_null(const std::optional<std::string>& text);
// A stored string as a value; null when absent.
Json text_or_null(const std::optional<std::string>& text);
// One event of the log as the API shows it: {"seq","pos","at","event","detail"}.
Json event_json(const store::TaskEvent& event);
// 405 NWP-HTTP-METHOD-NOT-ALLOWED with the Allow header.
net::HttpResponse method_not_allowed(const std::string& allowed);

}  // namespace nps::api
