// SPDX-License-Identifier: Apache-2.0
// Static DAG validation (NPS-5 §3.1.1, §9.2) and the portable topological
// order (§3.5: Kahn's algorithm, lexicographically smallest ready id first).
//
// Dependencies are the union of every node's `input_from` and every edge
// (the spec does not say which is authoritative; docs/protocol-choices.md).
// Check order, as the vectors require:
//   1. empty dag → NOP-TASK-DAG-INVALID; more than 32 nodes → NOP-TASK-DAG-TOO-LARGE
//   2. more than limits::kMaxEdges edges, an invalid or duplicate node id,
//      an input_from entry or edge end naming an undeclared node, a node
//      depending on itself (self-loop edge, or its own id in input_from),
//      a repeated edge or repeated input_from entry → NOP-TASK-DAG-INVALID
//   3. cycle → NOP-TASK-DAG-CYCLE (before any root/terminal check, so a pure
//      cycle with no root reports CYCLE)
//   4. no root or no terminal → NOP-TASK-DAG-INVALID
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::proto {

struct DagShape {
    std::vector<std::string> topological_order;  // Kahn, lexicographic tie-break
    std::vector<std::string> roots;              // no dependencies, sorted
    std::vector<std::string> terminals;          // no dependants, sorted
    // predecessors[i] / successors[i] are indexes into topological_order, sorted.
    std::vector<std::vector<std::size_t>> predecessors;
    std::vector<std::vector<std::size_t>> successors;
};

Result<DagShape> validate_dag(const Dag& dag);

// Delegation chain length in entities (orchestrator = 1, worker = 2, …);
// more than limits::kMaxDelegationChain → NOP-DELEGATE-CHAIN-TOO-DEEP.
// 0 is a caller bug (internal error, no protocol code).
Result<void> validate_delegation_chain(std::size_t entities);

}  // namespace nps::proto
