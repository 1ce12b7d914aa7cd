// SPDX-License-Identifier: Apache-2.0
// ndjson-v1, the runner's side of stdin: the DelegateFrame line, the cancel
// frame and the worker's environment.
#include "nps/supervisor/worker_protocol.hpp"

#include <algorithm>
#include <iterator>

#include "nps/base/json_string.hpp"

namespace nps::supervisor {

namespace {

Error delegate_error(const std::string& what)
{
    return internal_error("Invalid DelegateFrame for a worker: " + what);
}

// An identity field of the frame: a string without NUL, not empty when
// required; "" when an optional one is absent.
Result<std::string> identity_field(const nlohmann::json& frame, const char* key, bool required)
{
    const auto value = frame.find(key);
    if (value == frame.end() || value->is_null()) {
        if (required)
            return delegate_error(std::string(key) + ": required");
        return std::string();
    }
    if (!value->is_string())
        return delegate_error(std::string(key) + ": expected a string");
    const auto& s = value->get_ref<const std::string&>();
    if (required && s.empty())
        return delegate_error(std::string(key) + ": must not be empty");
    if (s.find('\0') != std::string::npos)
        return delegate_error(std::string(key) + ": must not contain NUL");
    return s;
}

}  // namespace

Result<DelegateLine> encode_delegate_frame(const nlohmann::json& frame)
{
    if (!frame.is_object())
        return delegate_error("not a JSON object");
    DelegateLine out;
    Assignment& a = out.assignment;
    a.task_id = NPS_TRY(identity_field(frame, "parent_task_id", true));
    a.subtask_id = NPS_TRY(identity_field(frame, "subtask_id", true));
    a.node_id = NPS_TRY(identity_field(frame, "node_id", true));
    a.agent_nid = NPS_TRY(identity_field(frame, "target_agent_nid", true));
    a.action = NPS_TRY(identity_field(frame, "action", true));
    a.deadline_at = NPS_TRY(identity_field(frame, "deadline_at", true));
    a.idempotency_key = NPS_TRY(identity_field(frame, "idempotency_key", false));
    try {
        if (const auto scope = frame.find("delegated_scope"); scope != frame.end() && !scope->is_null())
            out.delegated_scope_json = scope->dump();
        out.line = frame.dump();
    } catch (const nlohmann::json::exception& e) {  // a string that is not UTF-8
        return delegate_error(e.what());
    }
    if (out.line.size() > limits::kMaxDelegateFrameBytes)
        return delegate_error("larger than " + std::to_string(limits::kMaxDelegateFrameBytes) + " bytes");
    out.line.push_back('\n');
    return out;
}

std::string encode_cancel_frame(const DelegateLine& delegate)
{
    const Assignment& a = delegate.assignment;
    std::string out = R"({"frame":"0x41","parent_task_id":)";
    append_json_string(out, a.task_id);
    out += R"(,"subtask_id":)";
    append_json_string(out, a.subtask_id);
    out += R"(,"node_id":)";
    append_json_string(out, a.node_id);
    out += R"(,"target_agent_nid":)";
    append_json_string(out, a.agent_nid);
    out += R"(,"action":"cancel","params":{"task_id":)";
    append_json_string(out, a.task_id);
    out += R"(,"subtask_id":)";
    append_json_string(out, a.subtask_id);
    out += "}";
    if (!delegate.delegated_scope_json.empty())
        out += R"(,"delegated_scope":)" + delegate.delegated_scope_json;
    out += R"(,"deadline_at":)";
    append_json_string(out, a.deadline_at);
    if (!a.idempotency_key.empty()) {
        out += R"(,"idempotency_key":)";
        append_json_string(out, a.idempotency_key);
    }
    out += "}\n";
    return out;
}

std::vector<std::string> worker_environment(const Assignment& assignment, std::uint32_t attempt,
                                            std::optional<std::int64_t> cgn_budget, std::vector<std::string> base)
{
    std::vector<std::pair<std::string, std::string>> ours = {
        {"NPS_PROTOCOL", std::string(kProtocolName)},
        {"NPS_TASK_ID", assignment.task_id},
        {"NPS_NODE_ID", assignment.node_id},
        {"NPS_SUBTASK_ID", assignment.subtask_id},
        {"NPS_AGENT_NID", assignment.agent_nid},
        {"NPS_ACTION", assignment.action},
        {"NPS_ATTEMPT", std::to_string(attempt)},
        {"NPS_IDEMPOTENCY_KEY", assignment.idempotency_key},
        {"NPS_DEADLINE_AT", assignment.deadline_at},
    };
    if (cgn_budget)
        ours.emplace_back("NPS_CGN_BUDGET", std::to_string(*cgn_budget));
    std::vector<std::string> env;
    env.reserve(base.size() + ours.size());
    for (auto& entry : base) {
        bool replaced = false;
        for (const auto& [name, value] : ours)
            replaced = replaced || (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
                                    entry[name.size()] == '=');
        if (!replaced)
            env.push_back(std::move(entry));
    }
    for (const auto& [name, value] : ours)
        env.push_back(name + "=" + value);
    return env;
}

bool is_worker_variable(std::string_view entry)
{
    static constexpr std::string_view kNames[] = {
        "NPS_PROTOCOL", "NPS_TASK_ID", "NPS_NODE_ID", "NPS_SUBTASK_ID", "NPS_AGENT_NID",
        "NPS_ACTION", "NPS_ATTEMPT", "NPS_IDEMPOTENCY_KEY", "NPS_DEADLINE_AT", "NPS_CGN_BUDGET",
    };
    const std::string_view name = entry.substr(0, entry.find('='));
    return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

}  // namespace nps::supervisor
