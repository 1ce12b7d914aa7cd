// SPDX-License-Identifier: Apache-2.0
// decode_task_frame(): TaskFrame 0x40 (NPS-5 §3.1) from untrusted JSON.
#include "nps/proto/task_frame.hpp"

#include <limits>
#include <new>

#include "jcs_dom.hpp"
#include "message_text.hpp"
#include "nps/base/digest.hpp"
#include "nps/base/limits.hpp"
#include "nps/proto/callback_policy.hpp"
#include "nps/proto/callback_signature.hpp"
#include "nps/proto/dag.hpp"
#include "nps/proto/dedup.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/json_reader.hpp"
#include "task_frame_parts.hpp"

namespace nps::proto {

namespace {

using namespace detail;

constexpr std::uint64_t kUint32Max = std::numeric_limits<std::uint32_t>::max();

Result<void> check_frame_type(const object& root)
{
    const auto value = optional_member(root, "frame");
    if (!value)
        return {};
    std::string_view text;
    if (value->get(text) == simdjson::SUCCESS) {
        if (text == "0x40")
            return {};
        return field_error(kMalformed, "frame", "expected 64 or \"0x40\", got " + quote_text(text));
    }
    const std::uint64_t type = NPS_TRY(read_uint(*value, kMalformed, "frame", 0x40, 0x40));
    (void)type;
    return {};
}

Result<std::string> read_identifier(element value, std::string_view path)
{
    const std::string_view id = NPS_TRY(read_string(value, kMalformed, path));
    if (!is_valid_identifier(id))
        return field_error(kMalformed, path,
                           "invalid identifier " + quote_text(id) + " (expected 1..128 characters of A-Z a-z 0-9 . _ : -)");
    return std::string(id);
}

Result<TaskPriority> read_priority(element value)
{
    const std::string_view text = NPS_TRY(read_string(value, kMalformed, "priority"));
    if (text == "low")
        return TaskPriority::low;
    if (text == "normal")
        return TaskPriority::normal;
    if (text == "high")
        return TaskPriority::high;
    return field_error(kMalformed, "priority", "expected \"low\", \"normal\" or \"high\", got " + quote_text(text));
}

Result<CompensationPolicy> read_compensation_policy(element value)
{
    const std::string_view text = NPS_TRY(read_string(value, kMalformed, "compensation_policy"));
    if (text == "best_effort")
        return CompensationPolicy::best_effort;
    if (text == "strict")
        return CompensationPolicy::strict;
    if (text == "none")
        return CompensationPolicy::none;
    return field_error(kMalformed, "compensation_policy",
                       "expected \"best_effort\", \"strict\" or \"none\", got " + quote_text(text));
}

Result<AggregateMode> read_aggregate(element value)
{
    const std::string_view text = NPS_TRY(read_string(value, kMalformed, "aggregate"));
    for (AggregateMode mode : {AggregateMode::merge, AggregateMode::first, AggregateMode::all, AggregateMode::fastest_k,
                               AggregateMode::weighted_first_k, AggregateMode::merge_all})
        if (text == to_string(mode))
            return mode;
    return field_error(kMalformed, "aggregate",
                       "expected \"merge\", \"first\", \"all\", \"fastest_k\", \"weighted_first_k\" or "
                       "\"merge_all\", got " + quote_text(text));
}

// The task-level aggregation extension: `aggregate_k` only means something
// for the two K modes, so it is refused elsewhere rather than ignored.
Result<void> decode_aggregate_fields(const object& root, TaskFrame& frame)
{
    if (auto v = optional_member(root, "aggregate"))
        frame.aggregate = NPS_TRY(read_aggregate(*v));
    if (auto v = optional_member(root, "aggregate_k")) {
        const std::uint64_t k = NPS_TRY(read_uint(*v, kMalformed, "aggregate_k", 0, limits::kMaxDagNodes));
        if (frame.aggregate != AggregateMode::fastest_k && frame.aggregate != AggregateMode::weighted_first_k)
            return field_error(kMalformed, "aggregate_k",
                               "only applies to aggregate \"fastest_k\" or \"weighted_first_k\", not \"" +
                                   std::string(to_string(frame.aggregate)) + "\"");
        if (k > 0)
            frame.aggregate_k = static_cast<std::uint32_t>(k);
    }
    return {};
}

// reply_to and the SDKs' hop count.
Result<void> decode_delegation_fields(const object& root, TaskFrame& frame)
{
    // The NID whose inbox gets the task's completion message (the reference
    // runner's way of reporting; docs/reporting.md "Completion messages").
    if (auto v = optional_member(root, "reply_to")) {
        const std::string_view nid = NPS_TRY(read_string(*v, kMalformed, "reply_to"));
        if (!is_valid_nid(nid))
            return field_error(kMalformed, "reply_to",
                               "'" + std::string(nid) + "' is not an NID (urn:nps:…) whose inbox can take the "
                               "task's completion message");
        frame.reply_to = std::string(nid);
    }
    // `depth` is the TypeScript SDK's older name for it (alpha.15).
    const auto depth_value = optional_member(root, "delegate_depth");
    const auto old_depth_value = optional_member(root, "depth");
    if (depth_value && old_depth_value)
        return field_error(kMalformed, "depth", "give delegate_depth or its older name depth, not both");
    if (auto v = depth_value ? depth_value : old_depth_value) {
        const char* key = depth_value ? "delegate_depth" : "depth";
        const std::uint64_t depth = NPS_TRY(read_uint(*v, kMalformed, key, 0, 255));
        // The sender is entity depth + 1 of the chain, this runner's workers
        // (DelegateFrames of depth + 1) entity depth + 2.
        if (depth + 2 > limits::kMaxDelegationChain)
            return field_error(code::kNopDelegateChainTooDeep, key,
                               std::to_string(depth) + ": the workers would be entity " + std::to_string(depth + 2) +
                                   " of a delegation chain of at most " + std::to_string(limits::kMaxDelegationChain));
        frame.delegate_depth = static_cast<std::uint8_t>(depth);
    }
    return {};
}

// Everything but `dag` and the callback fields.
Result<void> decode_task_fields(const object& root, TaskFrame& frame)
{
    NPS_TRY_VOID(check_known_members(root,
                                     {"frame", "task_id", "dag", "timeout_ms", "max_retries", "priority",
                                      "callback_url", "preflight", "compensation_policy", "callback_secret",
                                      "result_ttl_seconds", "context", "request_id", "reply_to", "delegate_depth",
                                      "depth", "aggregate", "aggregate_k"},
                                     kMalformed, ""));
    NPS_TRY_VOID(check_frame_type(root));
    const element task_id = NPS_TRY(required_member(root, "task_id", kMalformed, "task_id"));
    frame.task_id = NPS_TRY(read_identifier(task_id, "task_id"));
    if (auto v = optional_member(root, "timeout_ms"))
        frame.timeout_ms = static_cast<std::uint32_t>(
            NPS_TRY(read_uint(*v, kMalformed, "timeout_ms", 1, limits::kMaxTaskTimeoutMs)));
    if (auto v = optional_member(root, "max_retries"))
        frame.max_retries = static_cast<std::uint8_t>(NPS_TRY(read_uint(*v, kMalformed, "max_retries", 0, 255)));
    if (auto v = optional_member(root, "priority"))
        frame.priority = NPS_TRY(read_priority(*v));
    if (auto v = optional_member(root, "preflight"))
        frame.preflight = NPS_TRY(read_bool(*v, kMalformed, "preflight"));
    if (auto v = optional_member(root, "compensation_policy"))
        frame.compensation_policy = NPS_TRY(read_compensation_policy(*v));
    if (auto v = optional_member(root, "result_ttl_seconds"))
        frame.result_ttl_seconds =
            static_cast<std::uint32_t>(NPS_TRY(read_uint(*v, kMalformed, "result_ttl_seconds", 0, kUint32Max)));
    if (auto v = optional_member(root, "context"))
        frame.context_json = NPS_TRY(decode_context(*v));
    if (auto v = optional_member(root, "request_id"))
        frame.request_id = NPS_TRY(read_identifier(*v, "request_id"));
    NPS_TRY_VOID(decode_delegation_fields(root, frame));
    NPS_TRY_VOID(decode_aggregate_fields(root, frame));
    return {};
}

Result<void> decode_callback_fields(const object& root, TaskFrame& frame)
{
    if (auto v = optional_member(root, "callback_url")) {
        const std::string_view url = NPS_TRY(read_string(*v, kCallbackInvalid, "callback_url"));
        NPS_TRY_VOID(check_callback_url(url));
        frame.callback_url = std::string(url);
    }
    if (auto v = optional_member(root, "callback_secret")) {
        const std::string_view secret = NPS_TRY(read_string(*v, kCallbackInvalid, "callback_secret"));
        NPS_TRY(decode_callback_secret(secret));
        frame.callback_secret = std::string(secret);
    }
    return {};
}

Result<TaskFrame> decode(std::string_view json_text)
{
    simdjson::dom::parser parser;
    const element root_value = NPS_TRY(json::parse_document(parser, json_text, "TaskFrame"));
    const object root = NPS_TRY(read_object(root_value, kMalformed, "TaskFrame"));

    // The whole-frame canonical form first: it rejects duplicate keys,
    // over-deep nesting and bad UTF-8 anywhere, so the field reads below
    // see an unambiguous document. `frame` is transport framing, not content.
    std::string canonical_frame;
    NPS_TRY_VOID(jcs_append(root_value, canonical_frame, {}, "frame"));

    TaskFrame frame;
    NPS_TRY_VOID(decode_task_fields(root, frame));

    const element dag_value = NPS_TRY(required_member(root, "dag", kDagInvalid, "dag"));
    frame.dag = NPS_TRY(decode_dag(dag_value));
    NPS_TRY(validate_dag(frame.dag));

    NPS_TRY_VOID(decode_callback_fields(root, frame));

    frame.canonical_dag_json = NPS_TRY(jcs_of(dag_value, "dag"));
    frame.dag_hash = dag_hash_from_canonical(frame.canonical_dag_json);
    frame.dedup_key = proto::dedup_key(frame.task_id, frame.dag_hash);
    frame.canonical_frame_hash = sha256_hex(canonical_frame);
    return frame;
}

}  // namespace

Result<TaskFrame> decode_task_frame(std::string_view json_text)
{
    try {
        return decode(json_text);
    } catch (const std::bad_alloc&) {
        return internal_error("TaskFrame decoding: out of memory");
    }
}

int inbox_priority(TaskPriority priority)
{
    switch (priority) {
    case TaskPriority::low: return -10;
    case TaskPriority::high: return 10;
    case TaskPriority::normal: break;
    }
    return 0;
}

}  // namespace nps::proto
