// SPDX-License-Identifier: Apache-2.0
#include "nps/api/task_deposit.hpp"

namespace nps::api {

store::DepositRequest task_deposit(const std::string& nid, const proto::TaskFrame& frame, std::string payload,
                                   const config::Config& config)
{
    return {
        .nid = nid,
        .task_id = frame.task_id,
        .payload = std::move(payload),
        .content_type = "application/json",
        .frame_hash = frame.canonical_frame_hash,
        .dag_hash = frame.dag_hash,
        .dedup_key = frame.dedup_key,
        .priority = 0,
        .ttl_seconds = config.default_ttl_seconds,
        .max_depth = config.max_depth,
        .max_inboxes = config.max_inboxes,
        .result_ttl_seconds = frame.result_ttl_seconds,
    };
}

}  // namespace nps::api
