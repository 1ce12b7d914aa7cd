// SPDX-License-Identifier: Apache-2.0
#include "node_rules.hpp"

#include "nps/base/limits.hpp"

#include "nps/proto/error_codes.hpp"
#include "nps/proto/states.hpp"

namespace nps::store::detail {

Result<void> check_node_result(const NodeResult& result)
{
    if (result.result_json && result.result_json->size() > limits::kMaxNodeResultBytes)
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              "Node '" + result.node_id + "' of task '" + result.task_id + "': result exceeds " +
                                  std::to_string(limits::kMaxNodeResultBytes) + " bytes");
    return {};
}

int saga_rank(proto::NodeState state)
{
    using proto::NodeState;
    switch (state) {
    case NodeState::completed: return 1;
    case NodeState::compensating: return 2;
    case NodeState::compensated:
    case NodeState::compensation_failed: return 3;
    case NodeState::pending:
    case NodeState::running:
    case NodeState::failed:
    case NodeState::cancelled:
    case NodeState::skipped: return 0;
    }
    return 0;
}

bool starts_compensation(proto::NodeState recorded, proto::NodeState reported)
{
    return recorded == proto::NodeState::completed && reported == proto::NodeState::compensating;
}

bool is_stale_saga_report(proto::NodeState recorded, proto::NodeState reported)
{
    const int reported_rank = saga_rank(reported);
    return reported_rank > 0 && reported_rank < 3 && saga_rank(recorded) > reported_rank;
}

}  // namespace nps::store::detail
