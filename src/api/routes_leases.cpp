// SPDX-License-Identifier: Apache-2.0
// The task-claim protocol over HTTP (NPS-5 §8.1, CR-0007 §4): claim, renew,
// release.
#include "nps/api/api.hpp"
#include "nps/api/json_io.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/time_format.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/states.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::api {

namespace {

// The {runner_nid, lease_seconds} pair every lease request carries.
struct LeaseRequest {
    std::string runner_nid;
    std::uint32_t lease_seconds = 0;
};

Result<std::string> runner_nid_field(const Json& body)
{
    auto nid = NPS_TRY(required_string(body, "runner_nid", limits::kMaxNidChars));
    if (!proto::is_valid_nid(nid))
        return protocol_error(proto::code::kNwpHttpParamInvalid, "Field 'runner_nid' is not a NID (urn:nps:…)");
    return nid;
}

Result<LeaseRequest> lease_request(const Json& body)
{
    LeaseRequest request;
    request.runner_nid = NPS_TRY(runner_nid_field(body));
    // Any uint32 is clamped to [10, 600] by the store (0 → 10, as the
    // reference runner does); only a value outside uint32 or not an integer
    // is refused.
    request.lease_seconds = NPS_TRY(required_uint32(body, "lease_seconds"));
    return request;
}

// The deposited frame as a JSON value for the claim response.
Json task_json(const std::string& payload)
{
    Json parsed = Json::parse(payload, nullptr, /*allow_exceptions=*/false);
    return parsed.is_discarded() ? Json(nullptr) : parsed;
}

}  // namespace

Result<net::HttpResponse> Api::claim(const net::HttpRequest& request, const std::string& nid)
{
    NPS_TRY_VOID(check_inbox_nid(nid));
    auto body = NPS_TRY(parse_json_object(request.body));
    auto lease_req = NPS_TRY(lease_request(body));
    auto task_id = NPS_TRY(optional_string(body, "task_id", limits::kMaxIdChars));
    auto dedup_key = NPS_TRY(optional_string(body, "dedup_key", 64));

    auto store = NPS_TRY(stores_.acquire());
    auto claimed = store->claim({.nid = nid,
                                 .runner_nid = lease_req.runner_nid,
                                 .lease_seconds = lease_req.lease_seconds,
                                 .task_id = task_id,
                                 .dedup_key = dedup_key});
    if (!claimed && claimed.error().code == proto::code::kNopClaimConflict)
        ++metrics_.claims_conflict;
    auto lease = NPS_TRY(std::move(claimed));
    if (!lease) {
        ++metrics_.claims_empty;
        return empty_response(204);
    }
    ++(lease->outcome == store::ClaimOutcome::reclaimed ? metrics_.claims_reclaimed : metrics_.claims_granted);

    // A reclaiming runner resumes at the first non-terminal node (CR-0007
    // §4.3): tell it which nodes are already terminal under this dedup_key.
    Json terminal = Json::object();
    for (const auto& r : NPS_TRY(store->node_results(lease->task_id)))
        if (r.dedup_key == lease->dedup_key && proto::is_terminal(r.state))
            terminal[r.node_id] = proto::to_string(r.state);
    return json_response(200, {
                                  {"outcome", store::to_string(lease->outcome)},
                                  {"task_id", lease->task_id},
                                  {"nid", nid},
                                  {"runner_nid", lease->runner_nid},
                                  {"dedup_key", lease->dedup_key},
                                  {"dag_hash", lease->dag_hash},
                                  {"lease_expiry", format_rfc3339_ms(lease->lease_expiry_ms)},
                                  {"lease_seconds", store::clamp_lease_seconds(lease_req.lease_seconds)},
                                  {"claims", lease->claims},
                                  {"message_id", std::to_string(lease->message.message_id)},
                                  {"terminal_nodes", std::move(terminal)},
                                  {"task", task_json(lease->message.payload)},
                              });
}

Result<net::HttpResponse> Api::renew(const net::HttpRequest& request, const std::string& task_id)
{
    auto lease_req = NPS_TRY(lease_request(NPS_TRY(parse_json_object(request.body))));
    auto store = NPS_TRY(stores_.acquire());
    auto renewed = store->renew(task_id, lease_req.runner_nid, lease_req.lease_seconds);
    if (renewed)
        ++metrics_.renewals;
    else if (renewed.error().code == proto::code::kNopClaimConflict)
        ++metrics_.renewals_conflict;
    auto expiry = NPS_TRY(std::move(renewed));
    return json_response(200, {{"task_id", task_id},
                               {"lease_expiry", format_rfc3339_ms(expiry)},
                               {"lease_seconds", store::clamp_lease_seconds(lease_req.lease_seconds)}});
}

Result<net::HttpResponse> Api::release(const net::HttpRequest& request, const std::string& task_id)
{
    auto it = request.query.find("runner_nid");
    if (it == request.query.end() || !proto::is_valid_nid(it->second))
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              "Query parameter 'runner_nid' must be the lease owner's NID");
    auto store = NPS_TRY(stores_.acquire());
    NPS_TRY_VOID(store->release(task_id, it->second));
    // The message is visible again: parked long-polls look again.
    loop_.defer([this] { wake_waiters(); });
    return empty_response(204);
}

// Ends a task as its live lease owner: the terminal state and aggregate are
// recorded and the message leaves the inbox (what a remote runner calls after
// reporting its nodes).
Result<net::HttpResponse> Api::complete(const net::HttpRequest& request, const std::string& task_id)
{
    auto body = NPS_TRY(parse_json_object(request.body));
    auto runner = NPS_TRY(runner_nid_field(body));
    const auto state = proto::parse_task_state(NPS_TRY(required_string(body, "state", 16)));
    if (state != proto::TaskState::completed && state != proto::TaskState::failed)
        return protocol_error(proto::code::kNwpHttpParamInvalid, "Field 'state' must be COMPLETED or FAILED");
    store::TaskOutcome outcome{.state = *state};
    outcome.error_code = NPS_TRY(optional_string(body, "error_code", 64));
    outcome.error_message = NPS_TRY(optional_string(body, "error_message", 4096));
    if (outcome.state == proto::TaskState::failed && !outcome.error_code)
        return protocol_error(proto::code::kNwpHttpParamInvalid, "A FAILED task needs 'error_code'");
    if (auto it = body.find("aggregate"); it != body.end() && !it->is_null())
        outcome.aggregate_json = it->dump();
    auto store = NPS_TRY(stores_.acquire());
    NPS_TRY_VOID(store->complete(task_id, runner, outcome));
    return json_response(200, {{"task_id", task_id}, {"state", std::string(proto::to_string(outcome.state))}});
}

}  // namespace nps::api
