// SPDX-License-Identifier: Apache-2.0
#include "nps/api/json_io.hpp"

#include <charconv>
#include <limits>

#include "nps/base/limits.hpp"
#include "nps/base/time_format.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/json_reader.hpp"
#include "nps/proto/json_to_value.hpp"

namespace nps::api {

namespace {

Error param_error(const char* field, const std::string& what)
{
    return protocol_error(proto::code::kNwpHttpParamInvalid, std::string("Field '") + field + "' " + what);
}

}  // namespace

Result<Json> parse_json_object(std::string_view text)
{
    // simdjson reads (and checks UTF-8); the copy to a held value bounds the depth.
    simdjson::dom::parser parser;  // per call: no buffer kept for the thread's life
    const auto root = proto::json::parse_document(parser, text, "Request body");
    if (!root)
        return protocol_error(proto::code::kNwpHttpFrameBodyMalformed, "Request body is not valid JSON");
    if (!root->is_object())
        return protocol_error(proto::code::kNwpHttpFrameBodyMalformed, "Request body must be a JSON object");
    auto value = proto::json::to_value(*root, limits::kMaxJsonDepth);
    if (!value)
        return protocol_error(proto::code::kNwpHttpFrameBodyMalformed,
                              "Request body nests deeper than " + std::to_string(limits::kMaxJsonDepth) + " levels");
    return std::move(*value);
}

Result<std::optional<std::string>> optional_string(const Json& object, const char* field, std::size_t max_chars)
{
    auto it = object.find(field);
    if (it == object.end() || it->is_null())
        return std::optional<std::string>{};
    if (!it->is_string())
        return param_error(field, "must be a string");
    const auto& value = it->get_ref<const std::string&>();
    if (value.empty())
        return param_error(field, "must not be empty");
    if (value.size() > max_chars)
        return param_error(field, "is longer than " + std::to_string(max_chars) + " characters");
    return std::optional<std::string>{value};
}

Result<std::string> required_string(const Json& object, const char* field, std::size_t max_chars)
{
    auto value = NPS_TRY(optional_string(object, field, max_chars));
    if (!value)
        return param_error(field, "is required");
    return *value;
}

Result<std::optional<std::uint32_t>> optional_uint32(const Json& object, const char* field)
{
    auto it = object.find(field);
    if (it == object.end() || it->is_null())
        return std::optional<std::uint32_t>{};
    if (!it->is_number_integer())
        return param_error(field, "must be an integer");
    if (it->is_number_unsigned()) {
        auto v = it->get<std::uint64_t>();
        if (v > std::numeric_limits<std::uint32_t>::max())
            return param_error(field, "must be at most 4294967295");
        return std::optional<std::uint32_t>{static_cast<std::uint32_t>(v)};
    }
    return param_error(field, "must not be negative");
}

Result<std::uint32_t> required_uint32(const Json& object, const char* field)
{
    auto value = NPS_TRY(optional_uint32(object, field));
    if (!value)
        return param_error(field, "is required");
    return *value;
}

net::HttpResponse json_response(int status, const Json& body)
{
    net::HttpResponse response;
    response.status = status;
    response.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
    response.body.push_back('\n');
    return response;
}

Result<std::int64_t> bounded_integer(const std::string& text, const char* name, std::int64_t fallback,
                                     std::int64_t min, std::int64_t max)
{
    if (text.empty())
        return fallback;
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              std::string(name) + " '" + text + "' is not an integer");
    if (value < min || value > max)
        return protocol_error(proto::code::kNwpHttpParamInvalid, std::string(name) + " must be between " +
                                                                     std::to_string(min) + " and " +
                                                                     std::to_string(max));
    return value;
}

net::HttpResponse empty_response(int status)
{
    net::HttpResponse response;
    response.status = status;
    response.content_type.clear();
    return response;
}

net::HttpResponse error_response(const std::string& code, const std::string& message, const Json& extra)
{
    auto info = proto::classify_error_code(code);
    Json body = extra.is_object() ? extra : Json::object();
    body["status"] = info.nps_status;
    body["error"] = code.empty() ? std::string(info.code) : code;
    body["message"] = message;
    return json_response(info.http_status, body);
}

net::HttpResponse error_response(const std::string& code, const std::string& message)
{
    return error_response(code, message, Json::object());
}

net::HttpResponse error_response(const Error& error)
{
    return error_response(error.code, error.describe());
}

net::HttpResponse method_not_allowed(const std::string& allowed)
{
    auto response =
        error_response(proto::code::kNwpHttpMethodNotAllowed, "Method not allowed here; allowed: " + allowed);
    response.headers.emplace_back("Allow", allowed);
    return response;
}

Json json_or_null(const std::optional<std::string>& text)
{
    if (!text)
        return nullptr;
    Json value = Json::parse(*text, nullptr, false);
    return value.is_discarded() ? Json(nullptr) : value;
}

Json text_or_null(const std::optional<std::string>& text)
{
    return text ? Json(*text) : Json(nullptr);
}

Json event_json(const store::TaskEvent& event)
{
    Json detail = Json::parse(event.detail_json, nullptr, /*allow_exceptions=*/false);
    if (detail.is_discarded())
        detail = Json::object();
    return {{"seq", event.seq},
            {"pos", event.pos},
            {"at", format_rfc3339_ms(event.at_ms)},
            {"event", event.name},
            {"detail", std::move(detail)}};
}

}  // namespace nps::api
