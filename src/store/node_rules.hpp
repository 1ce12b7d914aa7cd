// SPDX-License-Identifier: Apache-2.0
// Internal to store/: the rules of record_node_result that do not depend on
// the database, shared by both stores (store.hpp has the contract).
#pragma once

#include "nps/base/result.hpp"
#include "nps/proto/states.hpp"
#include "nps/store/types.hpp"

namespace nps::store::detail {

// NWP-HTTP-PARAM-INVALID for a result over limits::kMaxNodeResultBytes;
// checked before the store is touched.
Result<void> check_node_result(const NodeResult& result);

// The saga's order: COMPLETED 1 → COMPENSATING 2 → COMPENSATED |
// COMPENSATION_FAILED 3; any other state 0.
int saga_rank(proto::NodeState state);

// A COMPLETED node's record moving to COMPENSATING: the one move out of a
// terminal state.
bool starts_compensation(proto::NodeState recorded, proto::NodeState reported);

// A report (e.g. a task store's PATCH replayed by a durable outbox) of a saga
// state the node has already moved past.
bool is_stale_saga_report(proto::NodeState recorded, proto::NodeState reported);

}  // namespace nps::store::detail
