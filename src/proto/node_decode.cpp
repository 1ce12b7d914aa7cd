// SPDX-License-Identifier: Apache-2.0
// One DAG node (NPS-5 §3.1.1): field types and ranges. References between
// nodes are checked by validate_dag.
#include "message_text.hpp"
#include "nps/base/limits.hpp"
#include "nps/proto/nwp_url.hpp"
#include "task_frame_parts.hpp"
#include "utf8.hpp"

namespace nps::proto::detail {

namespace {

Result<std::string> decode_action(element value, const std::string& path)
{
    const std::string_view url = NPS_TRY(read_string(value, kDagInvalid, path));
    if (url.size() > limits::kMaxUrlChars)
        return field_error(kDagInvalid, path, "longer than " + std::to_string(limits::kMaxUrlChars) + " characters");
    if (!is_valid_nwp_url(url))
        return field_error(kDagInvalid, path, "expected an nwp://host/node-path URL, got " + quote_text(url));
    return std::string(url);
}

Result<std::vector<std::string>> decode_input_from(element value, const std::string& path)
{
    const array ids = NPS_TRY(read_array(value, kDagInvalid, path));
    if (ids.size() > limits::kMaxDagNodes)
        return field_error(kDagInvalid, path, "more than " + std::to_string(limits::kMaxDagNodes) + " entries");
    std::vector<std::string> out;
    std::size_t i = 0;
    for (element item : ids) {
        const std::string item_path = index_path(path, i++);
        const std::string_view id = NPS_TRY(read_string(item, kDagInvalid, item_path));
        if (!is_valid_identifier(id))
            return field_error(kDagInvalid, item_path, "invalid node id " + quote_text(id));
        out.emplace_back(id);
    }
    return out;
}

Result<std::string> decode_condition(element value, const std::string& path)
{
    const std::string_view text = NPS_TRY(read_string(value, kDagInvalid, path));
    const auto chars = utf8_length(text);
    if (!chars)
        return field_error(kDagInvalid, path, "not valid UTF-8");
    if (*chars > limits::kMaxConditionChars)
        return field_error(kConditionError, path,
                           std::to_string(*chars) + " characters, the limit is " +
                               std::to_string(limits::kMaxConditionChars));
    return std::string(text);
}

}  // namespace

Result<DagNode> decode_node(element value, const std::string& path)
{
    const object obj = NPS_TRY(read_object(value, kDagInvalid, path));
    NPS_TRY_VOID(check_known_members(obj,
                                     {"id", "action", "agent", "input_from", "input_mapping", "timeout_ms",
                                      "retry_policy", "condition", "compensate_action", "compensate_params_mapping"},
                                     kDagInvalid, path));
    DagNode node;

    const std::string id_path = member_path(path, "id");
    const element id_value = NPS_TRY(required_member(obj, "id", kDagInvalid, id_path));
    const std::string_view id = NPS_TRY(read_string(id_value, kDagInvalid, id_path));
    if (!is_valid_identifier(id))
        return field_error(kDagInvalid, id_path,
                           "invalid node id " + quote_text(id) + " (expected 1..128 characters of A-Z a-z 0-9 . _ : -)");
    node.id = std::string(id);

    const std::string action_path = member_path(path, "action");
    const element action_value = NPS_TRY(required_member(obj, "action", kDagInvalid, action_path));
    node.action = NPS_TRY(decode_action(action_value, action_path));

    const std::string agent_path = member_path(path, "agent");
    const element agent_value = NPS_TRY(required_member(obj, "agent", kDagInvalid, agent_path));
    const std::string_view agent = NPS_TRY(read_string(agent_value, kDagInvalid, agent_path));
    if (!is_valid_nid(agent))
        return field_error(kDagInvalid, agent_path, "invalid NID " + quote_text(agent) + " (expected urn:nps:...)");
    node.agent = std::string(agent);

    if (auto v = optional_member(obj, "input_from"))
        node.input_from = NPS_TRY(decode_input_from(*v, member_path(path, "input_from")));
    if (auto v = optional_member(obj, "input_mapping"))
        node.input_mapping_json = NPS_TRY(decode_mapping(*v, member_path(path, "input_mapping")));
    if (auto v = optional_member(obj, "timeout_ms"))
        node.timeout_ms = static_cast<std::uint32_t>(
            NPS_TRY(read_uint(*v, kDagInvalid, member_path(path, "timeout_ms"), 1, limits::kMaxTaskTimeoutMs)));
    if (auto v = optional_member(obj, "retry_policy"))
        node.retry_policy = NPS_TRY(decode_retry_policy(*v, member_path(path, "retry_policy")));
    if (auto v = optional_member(obj, "condition"))
        node.condition = NPS_TRY(decode_condition(*v, member_path(path, "condition")));
    if (auto v = optional_member(obj, "compensate_action"))
        node.compensate_action = NPS_TRY(decode_action(*v, member_path(path, "compensate_action")));
    if (auto v = optional_member(obj, "compensate_params_mapping"))
        node.compensate_params_mapping_json =
            NPS_TRY(decode_mapping(*v, member_path(path, "compensate_params_mapping")));
    return node;
}

}  // namespace nps::proto::detail
