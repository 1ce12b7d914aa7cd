// SPDX-License-Identifier: Apache-2.0
// The task's aggregate (NPS-5 §3.3.2 modes, §3.5.3): built from the results of
// the COMPLETED terminal (sink) nodes, given in stable topological order.
//
//   merge            fold left: two objects merge shallowly (a later node's
//                    member wins); otherwise the later value replaces the
//                    earlier one. One result → that result.
//   merge_all        as merge, but where both values are arrays (as members
//                    or as whole results) they are concatenated in
//                    topological order: {items:[1]} + {items:[2]} →
//                    {items:[1,2]}.
//   first            the first result in topological order (so production
//                    runs, whatever their completion order, agree with the
//                    portable order).
//   all              array of every result, in topological order.
//   fastest_k        array of the first K results by completion order
//                    (SinkResult::completed_seq), ties by node id.
//   weighted_first_k array of the K results with the highest numeric
//                    `score` member, then by node id; a result without a
//                    numeric score ranks below every scored one.
// K: `k` when set, else every result. No sinks → nullopt (no aggregate).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nps/nop/json_value.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::nop {

struct SinkResult {
    std::string node_id;
    Json result;
    // Order of completion in this run; nodes resumed from an earlier claim
    // carry 0 and so count as the earliest.
    std::uint64_t completed_seq = 0;
};

std::optional<Json> aggregate_results(proto::AggregateMode mode, std::optional<std::uint32_t> k,
                                      const std::vector<SinkResult>& sinks);

}  // namespace nps::nop
