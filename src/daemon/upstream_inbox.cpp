// SPDX-License-Identifier: Apache-2.0
#include "upstream_inbox.hpp"

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "nps/api/frame_body.hpp"
#include "nps/api/task_deposit.hpp"
#include "nps/base/digest.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/log.hpp"
#include "nps/base/time_format.hpp"
#include "nps/net/http_client.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/json_to_value.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::daemon {

namespace {

using Json = nlohmann::json;

constexpr unsigned kFirstBackoffMs = 1000;
constexpr unsigned kMaxBackoffMs = 30'000;
constexpr long kConnectSlackMs = 10'000;  // beyond the long-poll wait

// A refusal that the same message will meet again, however long we wait.
bool is_permanent(const Error& error)
{
    if (error.code.empty())
        return false;  // store or system failure: may pass
    const int status = proto::classify_error_code(error.code).http_status;
    return status >= 400 && status < 500 && status != 408 && status != 429;
}

struct Deposited {
    bool fresh = false;  // a new local deposit (not a duplicate)
};

// A string member of an object, or `fallback` when absent or not a string
// (the listing is untrusted: nothing here may throw).
std::string string_member(const Json& object, const char* key, const std::string& fallback)
{
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::int64_t now_ms()
{
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

Result<std::unique_ptr<UpstreamInbox>> UpstreamInbox::start(const config::Config& config, store::StorePool& stores,
                                                             std::function<void()> deposited)
{
    if (!config.upstream.npsd_url)
        return internal_error("No upstream npsd: set [upstream] npsd_url or serve --upstream-npsd URL");
    std::string inbox = config.upstream.inbox;
    if (inbox.empty() && !config.inboxes.empty())
        inbox = config.inboxes.front();
    if (inbox.empty())
        return internal_error("The upstream npsd needs an inbox to pull: set [upstream] inbox or serve --inbox NID");
    if (std::find(config.inboxes.begin(), config.inboxes.end(), inbox) == config.inboxes.end())
        log::warning("upstream: inbox " + inbox + " is pulled but not claimed by this runner ([runner] inboxes)");
    std::unique_ptr<UpstreamInbox> upstream(
        new UpstreamInbox(config, stores, std::move(deposited), std::move(inbox)));
    upstream->thread_ = std::thread([p = upstream.get()] { p->run(); });
    return upstream;
}

UpstreamInbox::UpstreamInbox(const config::Config& config, store::StorePool& stores, std::function<void()> deposited,
                             std::string inbox)
    : config_(config),
      stores_(stores),
      deposited_(std::move(deposited)),
      inbox_(std::move(inbox))
{
}

UpstreamInbox::~UpstreamInbox()
{
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

void UpstreamInbox::pause(unsigned ms)
{
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_.load(); });
}

void UpstreamInbox::run()
{
    log::info("upstream: pulling inbox " + inbox_ + " from " + *policy_.npsd_url);
    unsigned backoff = kFirstBackoffMs;
    while (!stopping_) {
        bool pulled = false;
        try {
            pulled = pull_once();
        } catch (const std::exception& e) {  // out of memory, say: never take the daemon down
            log::error(std::string("upstream: ") + e.what());
        }
        if (pulled) {
            backoff = kFirstBackoffMs;
            continue;
        }
        pause(backoff);
        backoff = std::min(backoff * 2, kMaxBackoffMs);
    }
}

bool UpstreamInbox::pull_once()
{
    const std::string inbox_url = *policy_.npsd_url + "/v1/inbox/" + net::url_encode(inbox_);
    std::vector<std::pair<std::string, std::string>> auth;
    if (policy_.token)
        auth.emplace_back("Authorization", "Bearer " + *policy_.token);

    auto peeked = net::http_request({
        .method = "GET",
        .url = inbox_url + "?wait=" + std::to_string(policy_.wait_seconds) + "&batch=" + std::to_string(policy_.batch),
        .headers = auth,
        .timeout_ms = static_cast<long>(policy_.wait_seconds) * 1000 + kConnectSlackMs,
        .cancel = &stopping_,
    });
    if (stopping_)
        return true;
    if (!peeked) {
        log::warning("upstream: peek failed, retrying: " + peeked.error().describe());
        return false;
    }
    if (peeked->status != 200) {
        log::warning("upstream: peek of " + inbox_url + " answered " + std::to_string(peeked->status) + ": " +
                     peeked->body.substr(0, 300));
        return false;
    }
    Json listing = proto::json::parse_to_value(peeked->body, limits::kMaxJsonDepth).value_or(nullptr);
    if (!listing.is_object() || !listing.contains("messages") || !listing["messages"].is_array()) {
        log::warning("upstream: peek of " + inbox_url + " did not answer {\"messages\": [...]}");
        return false;
    }

    for (const Json& message : listing["messages"]) {
        if (stopping_)
            return true;
        const Json* id = message.is_object() && message.contains("message_id") ? &message["message_id"] : nullptr;
        const std::string message_id = id == nullptr ? "" : id->is_string() ? id->get<std::string>() : id->dump();
        if (message_id.empty() || message_id.find_first_not_of("0123456789") != std::string::npos) {
            log::warning("upstream: a message without a numeric message_id; stopping this batch");
            return false;
        }

        auto deposited = [&]() -> Result<Deposited> {
            auto payload = base64_decode(string_member(message, "payload_b64", ""));
            if (!payload)
                return protocol_error(proto::code::kNwpHttpFrameBodyMalformed, "payload_b64 is not base64");
            net::HttpRequest carried;
            carried.headers["content-type"] = string_member(message, "content_type", "application/json");
            carried.body = std::move(*payload);
            if (carried.body.size() > config_.max_message_bytes)
                return protocol_error(proto::code::kNwpHttpBodyTooLarge,
                                      std::to_string(carried.body.size()) + " bytes exceed inbox.max_message_bytes");
            api::RequestBody body = NPS_TRY(api::read_request_body(carried, config_.max_message_bytes));
            if (body.frame && body.frame->frame_type != proto::ncp::kTaskFrame)
                return protocol_error(proto::code::kNwpHttpFrameBodyMalformed, "not a TaskFrame (0x40)");
            const proto::TaskFrame frame = NPS_TRY(proto::decode_task_frame(body.json));

            int priority = proto::inbox_priority(frame.priority);
            if (auto p = message.find("priority"); p != message.end() && p->is_number_integer())
                priority = static_cast<int>(std::clamp<std::int64_t>(p->get<std::int64_t>(), limits::kMinInboxPriority,
                                                                     limits::kMaxInboxPriority));
            std::int64_t ttl = config_.default_ttl_seconds;
            if (auto e = message.find("expires_at"); e != message.end() && e->is_string())
                if (auto expires = parse_rfc3339_ms(e->get<std::string>()))
                    ttl = std::clamp<std::int64_t>((*expires - now_ms() + 999) / 1000, 1, limits::kMaxInboxTtlSeconds);

            store::DepositRequest deposit = api::task_deposit(inbox_, frame, std::move(body.json), config_);
            deposit.priority = priority;
            deposit.ttl_seconds = ttl;
            auto result = NPS_TRY(NPS_TRY(stores_.acquire())->deposit(deposit));
            return Deposited{.fresh = !result.duplicate};
        }();

        if (!deposited && !is_permanent(deposited.error())) {
            log::warning("upstream: message " + message_id + " not taken yet, retrying: " +
                         deposited.error().describe());
            return false;
        }
        if (!deposited)
            log::warning("upstream: message " + message_id + " of " + inbox_ + " refused and dropped upstream: " +
                         deposited.error().describe());
        else if (deposited->fresh)
            log::info("upstream: message " + message_id + " deposited into " + inbox_);
        if (deposited && deposited->fresh && deposited_)
            deposited_();

        // Durable here (or refused for good): now the upstream may forget it.
        auto acked = net::http_request({
            .method = "DELETE",
            .url = inbox_url + "/" + message_id,
            .headers = auth,
            .timeout_ms = kConnectSlackMs,
            .cancel = &stopping_,
        });
        if (!acked || (acked->status != 204 && acked->status != 200 && acked->status != 404)) {
            log::warning("upstream: ack of message " + message_id + " failed, its next peek deposits it again: " +
                         (acked ? "status " + std::to_string(acked->status) : acked.error().describe()));
            return false;
        }
    }
    return true;
}

}  // namespace nps::daemon
