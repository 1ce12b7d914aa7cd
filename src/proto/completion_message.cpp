// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/completion_message.hpp"

#include "jcs_dom.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/json_reader.hpp"
#include "nps/proto/states.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::proto {

namespace {

using namespace detail;
using namespace json;

constexpr std::string_view kMalformed = code::kNwpHttpFrameBodyMalformed;

Result<CompletionMessage> decode(std::string_view json_text)
{
    simdjson::dom::parser parser;
    const element root_value = NPS_TRY(json::parse_document(parser, json_text, "completion message"));
    const object root = NPS_TRY(read_object(root_value, kMalformed, "completion message"));
    std::string canonical;
    NPS_TRY_VOID(jcs_append(root_value, canonical));  // duplicate keys, depth, UTF-8
    if (optional_member(root, "dag"))
        return field_error(kMalformed, "dag", "a completion message has no dag (a TaskFrame has no node_state)");

    CompletionMessage message;
    const element task_id = NPS_TRY(required_member(root, "task_id", kMalformed, "task_id"));
    message.task_id = std::string(NPS_TRY(read_string(task_id, kMalformed, "task_id")));
    if (!is_valid_identifier(message.task_id))
        return field_error(kMalformed, "task_id",
                           "'" + message.task_id + "' is not a task id (1-128 characters of A-Z a-z 0-9 . _ : -)");
    const element state = NPS_TRY(required_member(root, "node_state", kMalformed, "node_state"));
    message.node_state = std::string(NPS_TRY(read_string(state, kMalformed, "node_state")));
    const auto node_state = parse_node_state(message.node_state);
    if (node_state != NodeState::completed && node_state != NodeState::failed && node_state != NodeState::cancelled)
        return field_error(kMalformed, "node_state",
                           "expected \"COMPLETED\", \"FAILED\" or \"CANCELLED\", got '" + message.node_state + "'");
    return message;
}

}  // namespace

bool looks_like_completion_message(std::string_view json_text)
{
    try {
        simdjson::dom::parser parser;
        auto root = json::parse_document(parser, json_text, "completion message");
        if (!root || !root->is_object())
            return false;
        const object fields = root->get_object().value_unsafe();
        return fields.at_key("node_state").error() == simdjson::SUCCESS &&
               fields.at_key("dag").error() != simdjson::SUCCESS;
    } catch (const std::exception&) {
        return false;
    }
}

Result<CompletionMessage> decode_completion_message(std::string_view json_text)
{
    try {
        return decode(json_text);
    } catch (const std::bad_alloc&) {
        return internal_error("completion message decoding: out of memory");
    }
}

}  // namespace nps::proto
