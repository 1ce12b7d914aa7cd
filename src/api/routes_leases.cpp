// SPDX-License-Identifier: Apache-2.0
// The task-claim protocol over HTTP (NPS-5 §8.1, CR-0007 §4): claim, renew,
// release.
#include "nps/api/api.hpp"
#include "nps/api/json_io.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/time_format.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::api {

namespace {

Result<std::string> runner_nid_field(const Json& body)
{
    auto nid = NPS_TRY(required_string(body, "runner_nid", limits::kMaxNidChars));
    if (!proto::is_valid_nid(nid))
        return protocol_error("NWP-HTTP-PARAM-INVALID", "Field 'runner_nid' is not a NID (urn:nps:…)");
    return nid;
}

Result<std::uint32_t> lease_seconds_field(const Json& body)
{
    auto seconds = NPS_TRY(required_uint32(body, "lease_seconds"));
    if (seconds == 0)
        return protocol_error("NWP-HTTP-PARAM-INVALID", "Field 'lease_seconds' must be positive");
    return seconds;
}

// The deposited frame as a JSON value for the claim response.
Json task_json(const std::string& payload)
{
    Json parsed = Json::parse(payload, nullptr, /*allow_exceptions=*/false);
    return parsed.is_discarded() ? Json(nullptr) : parsed;
}

}  // namespace

net::HttpResponse Api::claim(const net::HttpRequest& request, const std::string& nid)
{
    if (auto ok = check_inbox_nid(nid); !ok)
        return error_response(ok.error());
    auto body = parse_json_object(request.body);
    if (!body)
        return error_response(body.error());
    auto runner = runner_nid_field(*body);
    if (!runner)
        return error_response(runner.error());
    auto seconds = lease_seconds_field(*body);
    if (!seconds)
        return error_response(seconds.error());
    auto task_id = optional_string(*body, "task_id", limits::kMaxIdChars);
    if (!task_id)
        return error_response(task_id.error());
    auto dedup_key = optional_string(*body, "dedup_key", 64);
    if (!dedup_key)
        return error_response(dedup_key.error());

    auto store = stores_.acquire();
    if (!store)
        return error_response(store.error());
    auto lease = (*store)->claim({.nid = nid,
                                  .runner_nid = *runner,
                                  .lease_seconds = *seconds,
                                  .task_id = *task_id,
                                  .dedup_key = *dedup_key});
    if (!lease) {
        if (lease.error().code == "NOP-CLAIM-CONFLICT")
            ++metrics_.claims_conflict;
        return error_response(lease.error());
    }
    if (!*lease) {
        ++metrics_.claims_empty;
        return empty_response(204);
    }
    const store::Lease& l = **lease;
    ++(l.outcome == store::ClaimOutcome::reclaimed ? metrics_.claims_reclaimed : metrics_.claims_granted);

    // A reclaiming runner resumes at the first non-terminal node (CR-0007
    // §4.3): tell it which nodes are already terminal under this dedup_key.
    Json terminal = Json::object();
    if (auto results = (*store)->node_results(l.task_id)) {
        for (const auto& r : *results)
            if (r.dedup_key == l.dedup_key && store::is_terminal_node_state(r.state))
                terminal[r.node_id] = r.state;
    } else {
        return error_response(results.error());
    }
    return json_response(200, {
                                  {"outcome", store::to_string(l.outcome)},
                                  {"task_id", l.task_id},
                                  {"nid", nid},
                                  {"runner_nid", l.runner_nid},
                                  {"dedup_key", l.dedup_key},
                                  {"dag_hash", l.dag_hash},
                                  {"lease_expiry", format_rfc3339_ms(l.lease_expiry_ms)},
                                  {"lease_seconds", store::clamp_lease_seconds(*seconds)},
                                  {"claims", l.claims},
                                  {"message_id", std::to_string(l.message.message_id)},
                                  {"terminal_nodes", std::move(terminal)},
                                  {"task", task_json(l.message.payload)},
                              });
}

net::HttpResponse Api::renew(const net::HttpRequest& request, const std::string& task_id)
{
    auto body = parse_json_object(request.body);
    if (!body)
        return error_response(body.error());
    auto runner = runner_nid_field(*body);
    if (!runner)
        return error_response(runner.error());
    auto seconds = lease_seconds_field(*body);
    if (!seconds)
        return error_response(seconds.error());
    auto store = stores_.acquire();
    if (!store)
        return error_response(store.error());
    auto expiry = (*store)->renew(task_id, *runner, *seconds);
    if (!expiry) {
        if (expiry.error().code == "NOP-CLAIM-CONFLICT")
            ++metrics_.renewals_conflict;
        return error_response(expiry.error());
    }
    ++metrics_.renewals;
    return json_response(200, {{"task_id", task_id},
                               {"lease_expiry", format_rfc3339_ms(*expiry)},
                               {"lease_seconds", store::clamp_lease_seconds(*seconds)}});
}

net::HttpResponse Api::release(const net::HttpRequest& request, const std::string& task_id)
{
    auto it = request.query.find("runner_nid");
    if (it == request.query.end() || !proto::is_valid_nid(it->second))
        return error_response("NWP-HTTP-PARAM-INVALID", "Query parameter 'runner_nid' must be the lease owner's NID");
    auto store = stores_.acquire();
    if (!store)
        return error_response(store.error());
    if (auto r = (*store)->release(task_id, it->second); !r)
        return error_response(r.error());
    return empty_response(204);
}

// Ends a task as its live lease owner: the terminal state and aggregate are
// recorded and the message leaves the inbox (what a remote runner calls after
// reporting its nodes).
net::HttpResponse Api::complete(const net::HttpRequest& request, const std::string& task_id)
{
    auto body = parse_json_object(request.body);
    if (!body)
        return error_response(body.error());
    auto runner = runner_nid_field(*body);
    if (!runner)
        return error_response(runner.error());
    auto state = required_string(*body, "state", 16);
    if (!state)
        return error_response(state.error());
    if (*state != store::kTaskCompleted && *state != store::kTaskFailed)
        return error_response("NWP-HTTP-PARAM-INVALID", "Field 'state' must be COMPLETED or FAILED");
    store::TaskOutcome outcome{.state = *state};
    auto code = optional_string(*body, "error_code", 64);
    if (!code)
        return error_response(code.error());
    auto message = optional_string(*body, "error_message", 4096);
    if (!message)
        return error_response(message.error());
    if (*state == store::kTaskFailed && !*code)
        return error_response("NWP-HTTP-PARAM-INVALID", "A FAILED task needs 'error_code'");
    outcome.error_code = *code;
    outcome.error_message = *message;
    if (auto it = body->find("aggregate"); it != body->end() && !it->is_null())
        outcome.aggregate_json = it->dump();
    auto store = stores_.acquire();
    if (!store)
        return error_response(store.error());
    if (auto r = (*store)->complete(task_id, *runner, outcome); !r)
        return error_response(r.error());
    return json_response(200, {{"task_id", task_id}, {"state", *state}});
}

}  // namespace nps::api
