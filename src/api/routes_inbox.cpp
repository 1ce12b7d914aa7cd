// SPDX-License-Identifier: Apache-2.0
// npsd-compatible inbox routes: deposit, peek (long-poll), ack, depth.
// A long-poll that finds nothing is parked (see api.hpp): no thread waits,
// no timer ticks; the deadline timer or a deposit answers it.
#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <utility>

#include "live_feeds.hpp"
#include "nps/api/api.hpp"
#include "nps/api/task_deposit.hpp"
#include "nps/api/frame_body.hpp"
#include "nps/api/json_io.hpp"
#include "nps/base/digest.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/time_format.hpp"
#include "nps/proto/completion_message.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::api {

namespace {

std::string query_value(const net::HttpRequest& request, const char* name)
{
    auto it = request.query.find(name);
    return it == request.query.end() ? std::string() : it->second;
}

// Accept JSON TaskFrames under the media types NPS uses for them (bare JSON,
// digest §1.3); anything else is refused rather than stored unread.
bool acceptable_content_type(const std::string& header)
{
    if (header.empty())
        return true;
    const std::string type = media_type_of(header);
    return type == "application/json" || is_frame_media_type(type);
}

Json message_json(const store::Message& m)
{
    return {
        {"message_id", std::to_string(m.message_id)},
        {"task_id", m.task_id.empty() ? Json(nullptr) : Json(m.task_id)},  // null: a notice, not a task
        {"enqueued_at", format_rfc3339_ms(m.enqueued_at_ms)},
        {"expires_at", m.expires_at_ms == INT64_MAX ? Json(nullptr) : Json(format_rfc3339_ms(m.expires_at_ms))},
        {"priority", m.priority},
        {"content_type", m.content_type},
        {"payload_b64", base64_encode(m.payload)},
    };
}

// A peek that found nothing.
net::HttpResponse empty_listing(const std::string& nid)
{
    return json_response(200, {{"nid", nid}, {"count", 0}, {"messages", Json::array()}});
}

}  // namespace

void Api::deposit(const net::HttpRequest& request, const std::string& nid, const Reply& reply)
{
    auto checked = checked_deposit(request, nid);
    if (!checked)
        return reply(std::move(checked).error());
    if (!*checked)
        return reply(deposit_completion_message(request, nid));
    if (!committer_)
        committer_ = std::make_unique<store::DepositCommitter>(stores_);
    store::DepositRequest& deposit = **checked;
    // On the committer's thread once durable; the answer goes out on the loop.
    auto answer = [this, alive = alive_, nid = deposit.nid, dedup_key = deposit.dedup_key,
                   reply](Result<store::DepositResult> result) {
        loop_.post([this, alive, nid, dedup_key, reply, result = std::move(result)]() mutable {
            if (!*alive)
                return;
            try {
                reply(deposit_answer(nid, dedup_key, std::move(result)));
            } catch (const std::exception& e) {  // as handle() does for the routes it calls
                reply(error_response(proto::code::kNpsServerInternal, std::string("Internal error: ") + e.what()));
            }
        });
    };
    committer_->submit(std::move(deposit), std::move(answer));
}

Result<std::optional<store::DepositRequest>> Api::checked_deposit(const net::HttpRequest& request,
                                                                  const std::string& nid)
{
    NPS_TRY_VOID(check_inbox_nid(nid));
    if (request.body.size() > config_.max_message_bytes)
        return protocol_error(proto::code::kNwpHttpBodyTooLarge, "TaskFrame of " + std::to_string(request.body.size()) +
                                                                     " bytes exceeds inbox.max_message_bytes (" +
                                                                     std::to_string(config_.max_message_bytes) + ")");
    const std::string& content_type = request.header("content-type");
    if (!acceptable_content_type(content_type))
        return protocol_error(proto::code::kNwpHttpContentTypeUnsupported,
                              "Content-Type '" + content_type + "' is not a JSON TaskFrame type");
    auto decoded = proto::decode_task_frame(request.body);
    if (!decoded && proto::looks_like_completion_message(request.body))
        return std::optional<store::DepositRequest>{};
    auto frame = NPS_TRY(std::move(decoded));
    auto priority = NPS_TRY(bounded_integer(request.header("x-nps-inbox-priority"), "X-Nps-Inbox-Priority",
                                            proto::inbox_priority(frame.priority), limits::kMinInboxPriority,
                                            limits::kMaxInboxPriority));
    auto ttl = NPS_TRY(bounded_integer(request.header("x-nps-inbox-ttl-seconds"), "X-Nps-Inbox-Ttl-Seconds",
                                       config_.default_ttl_seconds, 1, limits::kMaxInboxTtlSeconds));
    auto delay = NPS_TRY(bounded_integer(request.header("x-nps-inbox-delay-seconds"), "X-Nps-Inbox-Delay-Seconds", 0,
                                         0, limits::kMaxInboxTtlSeconds));
    if (delay >= ttl)
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              "X-Nps-Inbox-Delay-Seconds " + std::to_string(delay) +
                                  " must be below the message's TTL (" + std::to_string(ttl) +
                                  " s): it would expire before anyone could claim it");

    store::DepositRequest deposit = task_deposit(nid, frame, request.body, config_);
    if (!content_type.empty())
        deposit.content_type = content_type;
    deposit.priority = static_cast<int>(priority);
    deposit.ttl_seconds = ttl;
    deposit.delay_seconds = delay;
    return std::optional<store::DepositRequest>{std::move(deposit)};
}

Result<net::HttpResponse> Api::deposit_answer(const std::string& nid, const std::string& dedup_key,
                                              Result<store::DepositResult> committed)
{
    auto result = NPS_TRY(std::move(committed));
    if (result.duplicate) {
        ++metrics_.deposits_duplicate;
    } else {
        ++metrics_.deposits;
        // Parked long-polls of this inbox look again once this answer is out.
        loop_.defer([this, nid] { wake_waiters(nid); });
        if (hooks_.deposited)
            hooks_.deposited();
    }
    Json body = message_json(result.message);
    body.erase("payload_b64");
    body["nid"] = result.message.nid;
    body["dedup_key"] = dedup_key;
    body["duplicate"] = result.duplicate;
    return json_response(result.duplicate ? 200 : 201, body);
}

// Another runner's completion message (proto/completion_message.hpp): kept
// as a notice, which peek lists and ack removes, and no claim takes. Its
// Idempotency-Key (else the body's digest) makes a replay a duplicate.
Result<net::HttpResponse> Api::deposit_completion_message(const net::HttpRequest& request, const std::string& nid)
{
    const proto::CompletionMessage message = NPS_TRY(proto::decode_completion_message(request.body));
    const std::string& key = request.header("idempotency-key");
    if (key.size() > limits::kMaxIdempotencyKeyBytes)
        return protocol_error(proto::code::kNwpHttpParamInvalid, "Idempotency-Key longer than " +
                                                                     std::to_string(limits::kMaxIdempotencyKeyBytes) +
                                                                     " bytes");
    auto ttl = NPS_TRY(bounded_integer(request.header("x-nps-inbox-ttl-seconds"), "X-Nps-Inbox-Ttl-Seconds",
                                       config_.default_ttl_seconds, 1, limits::kMaxInboxTtlSeconds));
    auto store = NPS_TRY(stores_.acquire());
    auto result = NPS_TRY(store->deposit_notice({
        .nid = nid,
        .source = key.empty() ? "sha256:" + sha256_hex(request.body) : "key:" + key,
        .payload = request.body,
        .content_type = "application/json",
        .ttl_seconds = ttl,
        .max_depth = config_.max_depth,
    }));
    if (!result.duplicate) {
        ++metrics_.deposits;
        loop_.defer([this, nid] { wake_waiters(nid); });
    } else {
        ++metrics_.deposits_duplicate;
    }
    Json body = message_json(result.message);
    body.erase("payload_b64");
    body["nid"] = nid;
    body["reports_task"] = message.task_id;
    body["duplicate"] = result.duplicate;
    return json_response(result.duplicate ? 200 : 201, body);
}

void Api::peek(const net::HttpRequest& request, const std::string& nid, const Reply& reply)
{
    if (auto checked = check_inbox_nid(nid); !checked)
        return reply(std::move(checked).error());
    // npsd clamps rather than rejects out-of-range wait/batch; so do we, but
    // text that is not a number is still an error.
    constexpr auto kAny = std::numeric_limits<std::int64_t>::max();
    auto wait = bounded_integer(query_value(request, "wait"), "wait", 0, -kAny, kAny);
    if (!wait)
        return reply(std::move(wait).error());
    auto batch = bounded_integer(query_value(request, "batch"), "batch", limits::kDefaultPeekBatch, -kAny, kAny);
    if (!batch)
        return reply(std::move(batch).error());
    const std::int64_t wait_s = std::clamp<std::int64_t>(*wait, 0, limits::kMaxPeekWaitSeconds);
    const auto batch_n = static_cast<std::uint32_t>(std::clamp<std::int64_t>(*batch, 1, limits::kMaxPeekBatch));

    auto now = peek_now(nid, batch_n);
    if (!now)
        return reply(std::move(now).error());
    if (*now || wait_s == 0 || shutting_down_)
        return reply(std::move(*now).value_or(empty_listing(nid)));
    // Nothing yet: park until a deposit here or the deadline.
    const std::uint64_t id = next_parked_++;
    ParkedPeek& parked = parked_[id];
    parked.nid = nid;
    parked.batch = batch_n;
    parked.reply = reply;
    parked.deadline = loop_.add_timer_after(std::chrono::seconds(wait_s), [this, id] { answer_parked(id); });
}

Result<std::optional<net::HttpResponse>> Api::peek_now(const std::string& nid, std::uint32_t batch)
{
    // The store connection is given back at once.
    auto messages = NPS_TRY(NPS_TRY(stores_.acquire())->peek(nid, batch));
    if (messages.empty())
        return std::optional<net::HttpResponse>();
    Json list = Json::array();
    for (const auto& m : messages)
        list.push_back(message_json(m));
    return std::optional(json_response(200, {{"nid", nid}, {"count", messages.size()}, {"messages", std::move(list)}}));
}

void Api::answer_parked(std::uint64_t id)
{
    auto it = parked_.find(id);
    if (it == parked_.end())
        return;
    ParkedPeek parked = std::move(it->second);
    parked_.erase(it);
    loop_.cancel_timer(parked.deadline);
    auto now = peek_now(parked.nid, parked.batch);
    if (!now)
        return parked.reply(std::move(now).error());
    parked.reply(std::move(*now).value_or(empty_listing(parked.nid)));
}

void Api::wake_waiters(const std::optional<std::string>& nid)
{
    std::vector<std::uint64_t> ids;
    for (const auto& [id, parked] : parked_)
        if (!nid || parked.nid == *nid)
            ids.push_back(id);
    // Waiters on one inbox with one batch size share one look.
    std::map<std::pair<std::string, std::uint32_t>, Result<std::optional<net::HttpResponse>>> looked;
    for (std::uint64_t id : ids) {
        auto it = parked_.find(id);
        if (it == parked_.end())
            continue;
        const auto key = std::make_pair(it->second.nid, it->second.batch);
        auto seen = looked.find(key);
        if (seen == looked.end())
            seen = looked.emplace(key, peek_now(key.first, key.second)).first;
        auto now = seen->second;
        if (now && !*now)
            continue;  // still nothing: stays parked
        Reply reply = std::move(it->second.reply);
        loop_.cancel_timer(it->second.deadline);
        parked_.erase(it);
        if (now)
            reply(std::move(**now));
        else
            reply(std::move(now).error());
    }
}

void Api::begin_shutdown()
{
    shutting_down_ = true;
    feeds_->end_all();
    std::vector<std::uint64_t> ids;
    for (const auto& [id, parked] : parked_)
        ids.push_back(id);
    for (std::uint64_t id : ids)
        answer_parked(id);
}

Result<net::HttpResponse> Api::ack(const std::string& nid, const std::string& message_id)
{
    NPS_TRY_VOID(check_inbox_nid(nid));
    std::int64_t id = 0;
    auto [end, ec] = std::from_chars(message_id.data(), message_id.data() + message_id.size(), id);
    if (ec != std::errc() || end != message_id.data() + message_id.size() || id <= 0)
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              "message_id '" + message_id + "' is not a positive integer");
    NPS_TRY_VOID(NPS_TRY(stores_.acquire())->ack(nid, id));
    return empty_response(204);
}

Result<net::HttpResponse> Api::depth(const std::string& nid)
{
    NPS_TRY_VOID(check_inbox_nid(nid));
    auto depth = NPS_TRY(NPS_TRY(stores_.acquire())->depth(nid));
    return json_response(200, {{"nid", nid}, {"depth", depth}});
}

}  // namespace nps::api
