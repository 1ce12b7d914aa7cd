// SPDX-License-Identifier: Apache-2.0
#include "nps/report/report_messages.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include <nlohmann/json.hpp>

#include "nps/base/ascii.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/time_format.hpp"
#include "nps/net/http_client.hpp"
#include "nps/proto/json_to_value.hpp"
#include "nps/proto/states.hpp"

namespace nps::report {

namespace {

using Json = nlohmann::json;

// What the receiving API (parse_node_report) accepts; longer text is cut
// rather than having the whole report refused.
constexpr std::size_t kMaxErrorCodeBytes = 64;
constexpr std::size_t kMaxErrorMessageBytes = 4096;
constexpr std::size_t kMaxShownBodyBytes = 300;

// At most max bytes of text, not splitting a UTF-8 sequence.
std::string cut_utf8(const std::string& text, std::size_t max)
{
    if (text.size() <= max)
        return text;
    std::size_t end = max;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
        --end;
    return text.substr(0, end);
}

Json text_or_null(const std::optional<std::string>& text, std::size_t max = std::numeric_limits<std::size_t>::max())
{
    if (!text || text->empty())
        return nullptr;
    return cut_utf8(*text, max);
}

// Compact, sorted keys (nlohmann's object order); invalid UTF-8 replaced, so
// an odd stored string can never make a report unsendable.
std::string dump(const Json& value)
{
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json parsed_or_null(const std::optional<std::string>& text)
{
    if (!text)
        return nullptr;
    Json value = Json::parse(*text, nullptr, false);
    return value.is_discarded() ? Json(nullptr) : value;
}

bool is_retryable_status(long status)
{
    return status == 408 || status == 425 || status == 429 || (status >= 500 && status <= 599);
}

std::string printable(std::string_view text, std::size_t max)
{
    std::string out;
    for (char c : text.substr(0, max))
        out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
    if (text.size() > max)
        out += "...";
    return out;
}

}  // namespace

std::string node_report_url(const std::string& task_store_url, const std::string& task_id,
                            const std::string& node_id)
{
    return task_store_url + "/" + net::url_encode(task_id) + "/nodes/" + net::url_encode(node_id);
}

std::string node_report_idempotency_key(const store::ReportRow& row)
{
    return row.dedup_key + ":" + row.node_id + ":" + row.state;
}

Result<std::string> node_report_body(const store::ReportRow& row)
{
    Json result = nullptr;
    if (row.result_json) {
        result = Json::parse(*row.result_json, nullptr, false);
        if (result.is_discarded())
            return internal_error("The recorded result of node '" + row.node_id + "' of task '" + row.task_id +
                                  "' is not JSON");
    }
    Json error = nullptr;
    if (row.error_code && !row.error_code->empty())
        error = Json{{"code", cut_utf8(*row.error_code, kMaxErrorCodeBytes)},
                     {"message", text_or_null(row.error_message, kMaxErrorMessageBytes)}};
    const Json body = {
        {"task_id", row.task_id},
        {"node_id", row.node_id},
        {"dedup_key", row.dedup_key},
        {"state", row.state},
        {"attempts", row.attempts},
        {"error", std::move(error)},
        {"result", std::move(result)},
        {"killed_reason", text_or_null(row.killed_reason)},
        {"runner_nid", text_or_null(row.runner_nid)},
        {"reported_at", format_rfc3339_ms(row.recorded_at_ms)},
    };
    return dump(body);
}

namespace {

// The task's node records as the callback and the completion message show them.
Json node_states(const store::TaskRecord& task, const std::vector<store::NodeResult>& nodes)
{
    Json states = Json::object();
    for (const auto& n : nodes) {
        if (n.dedup_key != task.dedup_key)
            continue;  // a record under another DAG of the same task_id is not this task's
        states[n.node_id] = {
            {"state", ascii_lower(proto::to_string(n.state))},
            {"attempts", n.attempts},
            {"error_code", text_or_null(n.error_code)},
        };
    }
    return states;
}

}  // namespace

std::string callback_body(const store::TaskRecord& task, const std::vector<store::NodeResult>& nodes)
{
    const Json body = {
        {"task_id", task.task_id},
        {"state", ascii_lower(proto::to_string(task.state))},
        {"error_code", text_or_null(task.error_code)},
        {"aggregate", parsed_or_null(task.aggregate_json)},
        {"nodes", node_states(task, nodes)},
    };
    return dump(body);
}

std::string completion_message_body(const store::TaskRecord& task, const std::vector<store::NodeResult>& nodes,
                                    const std::vector<store::TaskEvent>& events)
{
    Json body = {
        {"task_id", task.task_id},
        {"node_state", proto::to_string(task.state)},
        {"state", ascii_lower(proto::to_string(task.state))},
        {"nodes", node_states(task, nodes)},
        {"created_at", format_rfc3339_ms(task.created_at_ms)},
        {"finished_at", format_rfc3339_ms(task.finished_at_ms.value_or(task.updated_at_ms))},
    };
    if (task.error_code && !task.error_code->empty())
        body["error_code"] = cut_utf8(*task.error_code, kMaxErrorCodeBytes);
    if (task.error_message && !task.error_message->empty())
        body["error_message"] = cut_utf8(*task.error_message, kMaxErrorMessageBytes);
    if (Json result = parsed_or_null(task.aggregate_json); !result.is_null())
        body["result"] = std::move(result);
    const auto claimed = std::find_if(events.begin(), events.end(), [](const store::TaskEvent& e) {
        return e.name == "lease:granted" || e.name == "lease:reclaimed";
    });
    if (claimed != events.end())
        body["started_at"] = format_rfc3339_ms(claimed->at_ms);
    const auto killed = std::find_if(nodes.begin(), nodes.end(), [&task](const store::NodeResult& n) {
        return n.dedup_key == task.dedup_key && n.state == proto::NodeState::failed && n.killed_reason && !n.killed_reason->empty() &&
               n.error_code == task.error_code;
    });
    if (killed != nodes.end())
        body["killed_reason"] = *killed->killed_reason;
    return dump(body);
}

std::string completion_idempotency_key(const store::TaskRecord& task)
{
    return task.dedup_key + ":reply";
}

std::string npsd_inbox_url(const std::string& npsd_url, const std::string& nid)
{
    return npsd_url + "/v1/inbox/" + net::url_encode(nid);
}

std::string callback_idempotency_key(const store::TaskRecord& task)
{
    return task.dedup_key + ":callback";
}

Verdict judge_task_store_status(long status)
{
    if (status >= 200 && status <= 299)
        return Verdict::delivered;
    if (status >= 400 && status <= 499 && !is_retryable_status(status))
        return Verdict::refused;
    return Verdict::retry;
}

Verdict judge_callback_status(long status)
{
    if (status >= 200 && status <= 299)
        return Verdict::delivered;
    if (is_retryable_status(status))
        return Verdict::retry;
    if ((status >= 300 && status <= 399) || (status >= 400 && status <= 499))
        return Verdict::refused;
    return Verdict::retry;
}

std::string describe_answer(long status, std::string_view body)
{
    std::string text = "HTTP " + std::to_string(status);
    if (body.size() <= limits::kMaxReportResponseBytes) {
        const Json parsed = proto::json::parse_to_value(body, limits::kMaxJsonDepth).value_or(nullptr);
        if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_string()) {
            text += " " + printable(parsed["error"].get<std::string>(), 80);
            if (parsed.contains("message") && parsed["message"].is_string())
                text += ": " + printable(parsed["message"].get<std::string>(), kMaxShownBodyBytes);
            return text;
        }
    }
    if (!body.empty())
        text += ": " + printable(body, kMaxShownBodyBytes);
    return text;
}

std::int64_t backoff_ms(std::uint32_t failures, std::int64_t initial_ms, std::int64_t max_ms)
{
    std::int64_t delay = std::max<std::int64_t>(initial_ms, 1);
    for (std::uint32_t i = 1; i < failures && delay < max_ms; ++i)
        delay *= 2;
    return std::min(delay, max_ms);
}

std::optional<std::int64_t> parse_retry_after_ms(std::string_view value, std::int64_t now_ms)
{
    constexpr std::int64_t kCapMs = limits::kMaxReportRetryAfterSeconds * 1000;
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
        value.remove_suffix(1);
    if (value.empty())
        return std::nullopt;
    if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        if (value.size() > 9)
            return kCapMs;
        std::int64_t seconds = 0;
        for (char c : value)
            seconds = seconds * 10 + (c - '0');
        return std::min(seconds * 1000, kCapMs);
    }
    const auto at = parse_http_date(value);
    if (!at)
        return std::nullopt;
    return std::clamp<std::int64_t>(*at * 1000 - now_ms, 0, kCapMs);
}

}  // namespace nps::report
