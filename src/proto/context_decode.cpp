// SPDX-License-Identifier: Apache-2.0
// The TaskFrame `context` object (NPS-5 §3.1.2, W3C TraceContext fields).
#include "jcs_dom.hpp"
#include "message_text.hpp"
#include "task_frame_parts.hpp"

namespace nps::proto::detail {

namespace {

bool is_lower_hex(std::string_view text, std::size_t length)
{
    if (text.size() != length)
        return false;
    for (char c : text)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    return true;
}

Result<void> check_hex_id(const object& context, std::string_view key, std::size_t length)
{
    const auto value = optional_member(context, key);
    if (!value)
        return {};
    const std::string path = member_path("context", key);
    const std::string_view text = NPS_TRY(read_string(*value, kMalformed, path));
    if (!is_lower_hex(text, length) || text.find_first_not_of('0') == std::string_view::npos)
        return field_error(kMalformed, path,
                           "expected " + std::to_string(length) + " lowercase hex digits, not all zero, got " +
                               quote_text(text));
    return {};
}

}  // namespace

Result<std::string> decode_context(element value)
{
    const object context = NPS_TRY(read_object(value, kMalformed, "context"));
    if (auto v = optional_member(context, "session_id"))
        NPS_TRY(read_string(*v, kMalformed, "context.session_id"));
    NPS_TRY_VOID(check_hex_id(context, "trace_id", 32));
    NPS_TRY_VOID(check_hex_id(context, "span_id", 16));
    if (auto v = optional_member(context, "trace_flags"))
        NPS_TRY(read_uint(*v, kMalformed, "context.trace_flags", 0, 255));
    if (auto v = optional_member(context, "baggage"))
        NPS_TRY(read_object(*v, kMalformed, "context.baggage"));
    return jcs_of(value, "context");
}

}  // namespace nps::proto::detail
