// SPDX-License-Identifier: Apache-2.0
// A node's retry_policy (NPS-5 §3.1.4).
#include <cstdint>
#include <limits>

#include "message_text.hpp"
#include "nps/base/limits.hpp"
#include "task_frame_parts.hpp"

namespace nps::proto::detail {

namespace {

// Our bound on retry_on: the spec defines fewer NOP codes than this.
constexpr std::uint64_t kUint32Max = std::numeric_limits<std::uint32_t>::max();

Result<Backoff> decode_backoff(element value, const std::string& path)
{
    const std::string_view text = NPS_TRY(read_string(value, kDagInvalid, path));
    if (text == "exponential")
        return Backoff::exponential;
    if (text == "fixed")
        return Backoff::fixed;
    if (text == "linear")
        return Backoff::linear;
    return field_error(kDagInvalid, path, "expected \"exponential\", \"fixed\" or \"linear\", got " + quote_text(text));
}

Result<std::vector<std::string>> decode_retry_on(element value, const std::string& path)
{
    const array codes = NPS_TRY(read_array(value, kDagInvalid, path));
    if (codes.size() > limits::kMaxRetryOnCodes)
        return field_error(kDagInvalid, path,
                           "more than " + std::to_string(limits::kMaxRetryOnCodes) + " error codes");
    std::vector<std::string> out;
    std::size_t i = 0;
    for (element item : codes) {
        const std::string item_path = index_path(path, i++);
        const std::string_view code = NPS_TRY(read_string(item, kDagInvalid, item_path));
        if (!is_valid_identifier(code))
            return field_error(kDagInvalid, item_path, "invalid error code " + quote_text(code));
        out.emplace_back(code);
    }
    return out;
}

}  // namespace

Result<RetryPolicy> decode_retry_policy(element value, const std::string& path)
{
    const object obj = NPS_TRY(read_object(value, kDagInvalid, path));
    NPS_TRY_VOID(check_known_members(obj, {"max_retries", "backoff", "initial_delay_ms", "max_delay_ms", "retry_on"},
                                     kDagInvalid, path));
    RetryPolicy policy;
    if (auto v = optional_member(obj, "max_retries"))
        policy.max_retries =
            static_cast<std::uint8_t>(NPS_TRY(read_uint(*v, kDagInvalid, member_path(path, "max_retries"), 0, 255)));
    if (auto v = optional_member(obj, "backoff"))
        policy.backoff = NPS_TRY(decode_backoff(*v, member_path(path, "backoff")));
    if (auto v = optional_member(obj, "initial_delay_ms"))
        policy.initial_delay_ms = static_cast<std::uint32_t>(
            NPS_TRY(read_uint(*v, kDagInvalid, member_path(path, "initial_delay_ms"), 0, kUint32Max)));
    if (auto v = optional_member(obj, "max_delay_ms"))
        policy.max_delay_ms = static_cast<std::uint32_t>(
            NPS_TRY(read_uint(*v, kDagInvalid, member_path(path, "max_delay_ms"), 0, kUint32Max)));
    if (auto v = optional_member(obj, "retry_on"))
        policy.retry_on = NPS_TRY(decode_retry_on(*v, member_path(path, "retry_on")));
    return policy;
}

}  // namespace nps::proto::detail
