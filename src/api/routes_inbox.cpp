// SPDX-License-Identifier: Apache-2.0
// npsd-compatible inbox routes: deposit, peek (long-poll), ack, depth.
#include <algorithm>
#include <charconv>

#include "nps/api/api.hpp"
#include "nps/api/json_io.hpp"
#include "nps/base/digest.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/time_format.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::api {

namespace {

// An integer header or query value within [min, max]; `fallback` when absent.
Result<std::int64_t> bounded_integer(const std::string& text, const char* name, std::int64_t fallback,
                                     std::int64_t min, std::int64_t max)
{
    if (text.empty())
        return fallback;
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
        return protocol_error("NWP-HTTP-PARAM-INVALID", std::string(name) + " '" + text + "' is not an integer");
    if (value < min || value > max)
        return protocol_error("NWP-HTTP-PARAM-INVALID", std::string(name) + " must be between " +
                                                            std::to_string(min) + " and " + std::to_string(max));
    return value;
}

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
    std::string type = header.substr(0, header.find(';'));
    while (!type.empty() && type.back() == ' ')
        type.pop_back();
    std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
    return type == "application/json" || type == "application/nwp-frame" || type == "application/x-nps-frame";
}

int default_priority(proto::TaskPriority priority)
{
    switch (priority) {
    case proto::TaskPriority::low: return -10;
    case proto::TaskPriority::high: return 10;
    case proto::TaskPriority::normal: break;
    }
    return 0;
}

Json message_json(const store::Message& m)
{
    return {
        {"message_id", std::to_string(m.message_id)},
        {"task_id", m.task_id},
        {"enqueued_at", format_rfc3339_ms(m.enqueued_at_ms)},
        {"expires_at", m.expires_at_ms == INT64_MAX ? Json(nullptr) : Json(format_rfc3339_ms(m.expires_at_ms))},
        {"priority", m.priority},
        {"content_type", m.content_type},
        {"payload_b64", base64_encode(m.payload)},
    };
}

}  // namespace

net::HttpResponse Api::deposit(const net::HttpRequest& request, const std::string& nid)
{
    if (auto ok = check_inbox_nid(nid); !ok)
        return error_response(ok.error());
    if (request.body.size() > config_.max_message_bytes)
        return error_response("NWP-HTTP-BODY-TOO-LARGE", "TaskFrame of " + std::to_string(request.body.size()) +
                                                             " bytes exceeds inbox.max_message_bytes (" +
                                                             std::to_string(config_.max_message_bytes) + ")");
    const std::string& content_type = request.header("content-type");
    if (!acceptable_content_type(content_type))
        return error_response("NWP-HTTP-CONTENT-TYPE-UNSUPPORTED",
                              "Content-Type '" + content_type + "' is not a JSON TaskFrame type");
    auto frame = proto::decode_task_frame(request.body);
    if (!frame)
        return error_response(frame.error());
    auto priority = bounded_integer(request.header("x-nps-inbox-priority"), "X-Nps-Inbox-Priority",
                                    default_priority(frame->priority), limits::kMinInboxPriority,
                                    limits::kMaxInboxPriority);
    if (!priority)
        return error_response(priority.error());
    auto ttl = bounded_integer(request.header("x-nps-inbox-ttl-seconds"), "X-Nps-Inbox-Ttl-Seconds",
                               config_.default_ttl_seconds, 1, limits::kMaxInboxTtlSeconds);
    if (!ttl)
        return error_response(ttl.error());

    store::DepositRequest deposit{
        .nid = nid,
        .task_id = frame->task_id,
        .payload = request.body,
        .content_type = content_type.empty() ? "application/json" : content_type,
        .frame_hash = frame->canonical_frame_hash,
        .dag_hash = frame->dag_hash,
        .dedup_key = frame->dedup_key,
        .priority = static_cast<int>(*priority),
        .ttl_seconds = *ttl,
        .max_depth = config_.max_depth,
    };
    auto store = stores_.acquire();
    if (!store)
        return error_response(store.error());
    auto result = (*store)->deposit(deposit);
    if (!result)
        return error_response(result.error());
    const auto& m = result->message;
    if (result->duplicate) {
        ++metrics_.deposits_duplicate;
    } else {
        ++metrics_.deposits;
        deposits_.notify();
    }
    Json body = message_json(m);
    body.erase("payload_b64");
    body["nid"] = m.nid;
    body["dedup_key"] = frame->dedup_key;
    body["duplicate"] = result->duplicate;
    return json_response(result->duplicate ? 200 : 201, body);
}

net::HttpResponse Api::peek(const net::HttpRequest& request, const std::string& nid)
{
    if (auto ok = check_inbox_nid(nid); !ok)
        return error_response(ok.error());
    // npsd clamps rather than rejects out-of-range wait/batch; so do we, but
    // text that is not a number is still an error.
    auto wait = bounded_integer(query_value(request, "wait"), "wait", 0, INT64_MIN, INT64_MAX);
    if (!wait)
        return error_response(wait.error());
    auto batch = bounded_integer(query_value(request, "batch"), "batch", limits::kDefaultPeekBatch, INT64_MIN,
                                 INT64_MAX);
    if (!batch)
        return error_response(batch.error());
    std::int64_t wait_s = std::clamp<std::int64_t>(*wait, 0, limits::kMaxPeekWaitSeconds);
    auto batch_n = static_cast<std::uint32_t>(std::clamp<std::int64_t>(*batch, 1, limits::kMaxPeekBatch));

    const std::int64_t deadline = clock_.now_ms() + wait_s * 1000;
    std::uint64_t seen = deposits_.generation();
    for (;;) {
        std::vector<store::Message> messages;
        {
            auto store = stores_.acquire();
            if (!store)
                return error_response(store.error());
            auto peeked = (*store)->peek(nid, batch_n);
            if (!peeked)
                return error_response(peeked.error());
            messages = std::move(*peeked);
        }
        std::int64_t left = deadline - clock_.now_ms();
        if (!messages.empty() || left <= 0 || deposits_.closed()) {
            Json list = Json::array();
            for (const auto& m : messages)
                list.push_back(message_json(m));
            return json_response(200, {{"nid", nid}, {"count", messages.size()}, {"messages", std::move(list)}});
        }
        // Wake on a local deposit at once; re-check every 100 ms for deposits
        // made by other processes sharing runner.db.
        seen = deposits_.wait(seen, static_cast<int>(std::min<std::int64_t>(left, 100)));
    }
}

net::HttpResponse Api::ack(const std::string& nid, const std::string& message_id)
{
    if (auto ok = check_inbox_nid(nid); !ok)
        return error_response(ok.error());
    std::int64_t id = 0;
    auto [end, ec] = std::from_chars(message_id.data(), message_id.data() + message_id.size(), id);
    if (ec != std::errc() || end != message_id.data() + message_id.size() || id <= 0)
        return error_response("NWP-HTTP-PARAM-INVALID", "message_id '" + message_id + "' is not a positive integer");
    auto store = stores_.acquire();
    if (!store)
        return error_response(store.error());
    if (auto r = (*store)->ack(nid, id); !r)
        return error_response(r.error());
    return empty_response(204);
}

net::HttpResponse Api::depth(const std::string& nid)
{
    if (auto ok = check_inbox_nid(nid); !ok)
        return error_response(ok.error());
    auto store = stores_.acquire();
    if (!store)
        return error_response(store.error());
    auto d = (*store)->depth(nid);
    if (!d)
        return error_response(d.error());
    return json_response(200, {{"nid", nid}, {"depth", *d}});
}

}  // namespace nps::api
