// SPDX-License-Identifier: Apache-2.0
// ndjson-v1, the runner's side of stdin: the DelegateFrame line, the cancel
// frame and the worker's environment.
#include "nps/supervisor/worker_protocol.hpp"

#include <simdjson.h>

#include <memory>

#include "json_util.hpp"
#include "nps/base/json_string.hpp"
#include "nps/proto/jcs.hpp"

namespace nps::supervisor {

namespace {

Error delegate_error(const std::string& what)
{
    return internal_error("Invalid DelegateFrame for a worker: " + what);
}

Result<std::string> required_string(const simdjson::dom::object& frame, const char* key, bool required)
{
    simdjson::dom::element value;
    if (frame.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) {
        if (required)
            return delegate_error(std::string(key) + ": required");
        return std::string();
    }
    std::string_view s;
    if (value.get(s) != simdjson::SUCCESS)
        return delegate_error(std::string(key) + ": expected a string");
    if (required && s.empty())
        return delegate_error(std::string(key) + ": must not be empty");
    if (s.find('\0') != std::string_view::npos)
        return delegate_error(std::string(key) + ": must not contain NUL");
    return std::string(s);
}

// The frame's own text without insignificant whitespace: the worker gets the
// bytes we were given, numbers and escapes untouched, on one line.
Result<std::string> one_line(std::string_view json_text)
{
    std::unique_ptr<char[]> out(new char[json_text.size() + 1]);
    std::size_t length = 0;
    if (simdjson::minify(json_text.data(), json_text.size(), out.get(), length) != simdjson::SUCCESS)
        return delegate_error("not JSON");
    return std::string(out.get(), length);
}

}  // namespace

Result<DelegateLine> encode_delegate_frame(std::string_view json_text)
{
    if (json_text.size() > limits::kMaxDelegateFrameBytes)
        return delegate_error("larger than " + std::to_string(limits::kMaxDelegateFrameBytes) + " bytes");
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    std::string line;
    if (parser.parse(json_text.data(), json_text.size()).get(root) == simdjson::SUCCESS) {
        line = NPS_TRY(one_line(json_text));
    } else {
        // An integer beyond 64 bits (valid JSON simdjson cannot hold): the
        // worker gets the frame's canonical form, which spells it as a double.
        auto canonical = proto::jcs_canonicalize(json_text);
        if (!canonical || parser.parse(canonical->data(), canonical->size()).get(root) != simdjson::SUCCESS)
            return delegate_error("not JSON");
        line = std::move(*canonical);
    }
    simdjson::dom::object frame;
    if (root.get(frame) != simdjson::SUCCESS)
        return delegate_error("not a JSON object");

    DelegateLine out;
    Assignment& a = out.assignment;
    a.task_id = NPS_TRY(required_string(frame, "parent_task_id", true));
    a.subtask_id = NPS_TRY(required_string(frame, "subtask_id", true));
    a.node_id = NPS_TRY(required_string(frame, "node_id", true));
    a.agent_nid = NPS_TRY(required_string(frame, "target_agent_nid", true));
    a.action = NPS_TRY(required_string(frame, "action", true));
    a.deadline_at = NPS_TRY(required_string(frame, "deadline_at", true));
    a.idempotency_key = NPS_TRY(required_string(frame, "idempotency_key", false));
    simdjson::dom::element scope;
    if (frame.at_key("delegated_scope").get(scope) == simdjson::SUCCESS && !scope.is_null())
        out.delegated_scope_json = simdjson::to_string(scope);

    out.line = std::move(line);
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

}  // namespace nps::supervisor
