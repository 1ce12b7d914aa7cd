// SPDX-License-Identifier: Apache-2.0
#include "lease_rules.hpp"

#include "nps/base/time_format.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/states.hpp"
#include "nps/store/types.hpp"

namespace nps::store::detail {

Error lease_refusal(const std::string& task_id, const std::string& runner_nid, const LeaseRow& row,
                    std::int64_t now)
{
    std::string why;
    if (proto::is_terminal(row.state))
        why = "is already " + std::string(proto::to_string(row.state)) + "; its lease has ended";
    else if (!row.owner)
        why = "holds no lease";
    else if (*row.owner != runner_nid)
        why = "is leased by '" + *row.owner + "'" + (row.lease_expiry > now ? "" : " (expired)") + ", not by '" +
              runner_nid + "'";
    else if (row.lease_expiry <= now)
        why = "lease of '" + runner_nid + "' expired at " + format_rfc3339_ms(row.lease_expiry);
    else
        why = "is not leased by '" + runner_nid + "'";
    return protocol_error(proto::code::kNopClaimConflict, "Task '" + task_id + "' " + why);
}

Error named_claim_refusal(const std::string& task_id, const std::string& nid, const LeaseRow& row, std::int64_t now)
{
    if (row.queue != "queued")
        return protocol_error(proto::code::kNopTaskNotFound,
                              "Task '" + task_id + "' is no longer in inbox '" + nid + "'");
    if (row.lease_expiry > now)
        return protocol_error(proto::code::kNopClaimConflict, "Task '" + task_id + "' is leased by '" +
                                                                  row.owner.value_or("") + "' until " +
                                                                  format_rfc3339_ms(row.lease_expiry));
    if (row.expires_at <= now)
        return protocol_error(proto::code::kNopTaskNotFound,
                              "Task '" + task_id + "' expired from inbox '" + nid + "' unclaimed");
    return protocol_error(proto::code::kNopClaimConflict, "Task '" + task_id + "' is not claimable");
}

Result<void> check_terminal(const std::string& task_id, const TaskOutcome& outcome)
{
    if (!proto::is_terminal(outcome.state))
        return internal_error("Failed to complete task '" + task_id + "': '" +
                              std::string(proto::to_string(outcome.state)) + "' is not a terminal task state");
    return {};
}

}  // namespace nps::store::detail
