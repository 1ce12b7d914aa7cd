// SPDX-License-Identifier: Apache-2.0
// Static DAG validation and the portable topological order (nps/proto/dag.hpp).
#include "nps/proto/dag.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string_view>

#include "message_text.hpp"
#include "nps/base/limits.hpp"
#include "nps/proto/error_codes.hpp"

namespace nps::proto {

namespace {

using detail::quote_text;

constexpr std::string_view kInvalid = code::kNopTaskDagInvalid;

// At most 32 nodes (checked first), so a node set fits one 64-bit mask.
using NodeSet = std::uint64_t;
static_assert(limits::kMaxDagNodes <= 64);

constexpr NodeSet bit(std::size_t index) { return NodeSet{1} << index; }

Error invalid(std::string message) { return protocol_error(std::string(kInvalid), std::move(message)); }

Result<void> check_size(const Dag& dag)
{
    if (dag.nodes.empty())
        return invalid("dag.nodes: the DAG has no nodes");
    if (dag.nodes.size() > limits::kMaxDagNodes)
        return protocol_error(code::kNopTaskDagTooLarge, "dag.nodes: " + std::to_string(dag.nodes.size()) +
                                                             " nodes, the limit is " +
                                                             std::to_string(limits::kMaxDagNodes));
    if (dag.edges.size() > limits::kMaxEdges)
        return invalid("dag.edges: " + std::to_string(dag.edges.size()) + " edges, the limit is " +
                       std::to_string(limits::kMaxEdges));
    return {};
}

// Node id → declared index; rejects invalid and duplicate ids.
Result<std::map<std::string_view, std::size_t>> index_nodes(const Dag& dag)
{
    std::map<std::string_view, std::size_t> index;
    for (std::size_t i = 0; i < dag.nodes.size(); ++i) {
        const std::string& id = dag.nodes[i].id;
        const std::string path = "dag.nodes[" + std::to_string(i) + "].id";
        if (!is_valid_identifier(id))
            return invalid(path + ": invalid node id " + quote_text(id) +
                           " (expected 1..128 characters of A-Z a-z 0-9 . _ : -)");
        const auto [it, inserted] = index.emplace(id, i);
        if (!inserted)
            return invalid(path + ": duplicate node id " + quote_text(id) + " (first declared at dag.nodes[" +
                           std::to_string(it->second) + "])");
    }
    return index;
}

// predecessors[i]: declared indexes node i depends on (input_from ∪ edges).
Result<std::vector<NodeSet>> collect_dependencies(const Dag& dag,
                                                  const std::map<std::string_view, std::size_t>& index)
{
    const auto lookup = [&](const std::string& id, const std::string& path) -> Result<std::size_t> {
        const auto it = index.find(id);
        if (it == index.end())
            return invalid(path + ": unknown node " + quote_text(id));
        return it->second;
    };

    std::vector<NodeSet> predecessors(dag.nodes.size(), 0);
    for (std::size_t i = 0; i < dag.nodes.size(); ++i) {
        const auto& inputs = dag.nodes[i].input_from;
        NodeSet seen = 0;
        for (std::size_t k = 0; k < inputs.size(); ++k) {
            const std::string path = "dag.nodes[" + std::to_string(i) + "].input_from[" + std::to_string(k) + "]";
            const std::size_t from = NPS_TRY(lookup(inputs[k], path));
            if (from == i)
                return invalid(path + ": node " + quote_text(inputs[k]) + " depends on itself");
            if (seen & bit(from))
                return invalid(path + ": duplicate dependency " + quote_text(inputs[k]));
            seen |= bit(from);
        }
        predecessors[i] |= seen;
    }

    std::set<std::pair<std::size_t, std::size_t>> edges_seen;
    for (std::size_t k = 0; k < dag.edges.size(); ++k) {
        const std::string path = "dag.edges[" + std::to_string(k) + "]";
        const DagEdge& edge = dag.edges[k];
        const std::size_t from = NPS_TRY(lookup(edge.from, path + ".from"));
        const std::size_t to = NPS_TRY(lookup(edge.to, path + ".to"));
        if (from == to)
            return invalid(path + ": self-loop on node " + quote_text(edge.from));
        if (!edges_seen.emplace(from, to).second)
            return invalid(path + ": duplicate edge " + quote_text(edge.from) + " -> " + quote_text(edge.to));
        predecessors[to] |= bit(from);
    }
    return predecessors;
}

// Kahn's algorithm, smallest ready id first (NPS-5 §3.5). Returns declared
// indexes in order; fewer than n entries means a cycle.
std::vector<std::size_t> kahn_order(const Dag& dag, const std::vector<NodeSet>& predecessors)
{
    const std::size_t n = dag.nodes.size();
    const auto by_id = [&](std::size_t a, std::size_t b) { return dag.nodes[a].id < dag.nodes[b].id; };
    std::set<std::size_t, decltype(by_id)> ready(by_id);
    std::vector<NodeSet> waiting = predecessors;
    for (std::size_t i = 0; i < n; ++i)
        if (waiting[i] == 0)
            ready.insert(i);

    std::vector<std::size_t> order;
    order.reserve(n);
    while (!ready.empty()) {
        const std::size_t next = *ready.begin();
        ready.erase(ready.begin());
        order.push_back(next);
        for (std::size_t j = 0; j < n; ++j) {
            if (waiting[j] & bit(next)) {
                waiting[j] &= ~bit(next);
                if (waiting[j] == 0)
                    ready.insert(j);
            }
        }
    }
    return order;
}

Error cycle_error(const Dag& dag, const std::vector<std::size_t>& order)
{
    NodeSet ordered = 0;
    for (std::size_t i : order)
        ordered |= bit(i);
    std::vector<std::string_view> stuck;
    for (std::size_t i = 0; i < dag.nodes.size(); ++i)
        if (!(ordered & bit(i)))
            stuck.push_back(dag.nodes[i].id);
    std::sort(stuck.begin(), stuck.end());
    std::string names;
    for (std::string_view id : stuck)
        names += (names.empty() ? "" : ", ") + quote_text(id);
    return protocol_error(code::kNopTaskDagCycle, "dag: the dependencies form a cycle; nodes on or after it: " + names);
}

DagShape build_shape(const Dag& dag, const std::vector<NodeSet>& predecessors, const std::vector<std::size_t>& order)
{
    const std::size_t n = order.size();
    std::vector<std::size_t> position(n);
    for (std::size_t p = 0; p < n; ++p)
        position[order[p]] = p;

    DagShape shape;
    shape.predecessors.resize(n);
    shape.successors.resize(n);
    for (std::size_t p = 0; p < n; ++p) {
        shape.topological_order.push_back(dag.nodes[order[p]].id);
        for (std::size_t from = 0; from < n; ++from) {
            if (predecessors[order[p]] & bit(from)) {
                shape.predecessors[p].push_back(position[from]);
                shape.successors[position[from]].push_back(p);
            }
        }
    }
    for (std::size_t p = 0; p < n; ++p) {
        std::sort(shape.predecessors[p].begin(), shape.predecessors[p].end());
        std::sort(shape.successors[p].begin(), shape.successors[p].end());
        if (shape.predecessors[p].empty())
            shape.roots.push_back(shape.topological_order[p]);
        if (shape.successors[p].empty())
            shape.terminals.push_back(shape.topological_order[p]);
    }
    std::sort(shape.roots.begin(), shape.roots.end());
    std::sort(shape.terminals.begin(), shape.terminals.end());
    return shape;
}

}  // namespace

Result<DagShape> validate_dag(const Dag& dag)
{
    NPS_TRY_VOID(check_size(dag));
    const auto index = NPS_TRY(index_nodes(dag));
    const auto predecessors = NPS_TRY(collect_dependencies(dag, index));
    const std::vector<std::size_t> order = kahn_order(dag, predecessors);
    if (order.size() != dag.nodes.size())
        return cycle_error(dag, order);
    DagShape shape = build_shape(dag, predecessors, order);
    // Unreachable for a non-empty acyclic graph, kept as the documented rule.
    if (shape.roots.empty())
        return invalid("dag: no root node (every node has a dependency)");
    if (shape.terminals.empty())
        return invalid("dag: no terminal node (every node has a dependant)");
    return shape;
}

Result<void> validate_delegation_chain(std::size_t entities)
{
    if (entities == 0)
        return internal_error("delegation chain: length 0 (the orchestrator counts as 1)");
    if (entities > limits::kMaxDelegationChain)
        return protocol_error(code::kNopDelegateChainTooDeep, "delegation chain: " + std::to_string(entities) +
                                                                  " entities, the limit is " +
                                                                  std::to_string(limits::kMaxDelegationChain));
    return {};
}

}  // namespace nps::proto
