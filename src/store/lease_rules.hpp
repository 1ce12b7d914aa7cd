// SPDX-License-Identifier: Apache-2.0
// Internal to store/: why a lease operation was refused, worded alike by both
// stores from the task row they read (store.hpp has the contract).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "nps/base/result.hpp"
#include "nps/store/types.hpp"

namespace nps::store::detail {

// The task row as a refused operation found it.
struct LeaseRow {
    proto::TaskState state = proto::TaskState::pending;
    std::string queue{};                 // "queued" | "done"
    std::optional<std::string> owner{};  // lease_owner
    std::int64_t lease_expiry = 0;
    std::int64_t expires_at = 0;         // the TTL of the first claim
};

// runner_nid holds no live lease on task_id (renew, release, complete, a
// fenced record): NOP-CLAIM-CONFLICT saying why.
Error lease_refusal(const std::string& task_id, const std::string& runner_nid, const LeaseRow& row,
                    std::int64_t now);

// A claim of the named task in inbox nid took nothing: NOP-TASK-NOT-FOUND
// (no longer queued, or expired unclaimed) or NOP-CLAIM-CONFLICT (leased).
Error named_claim_refusal(const std::string& task_id, const std::string& nid, const LeaseRow& row,
                          std::int64_t now);

// complete() of task_id with an outcome that is not a terminal state: an
// internal error (a caller's bug), checked before the store is touched.
Result<void> check_terminal(const std::string& task_id, const TaskOutcome& outcome);

}  // namespace nps::store::detail
