// SPDX-License-Identifier: Apache-2.0
// validate_dag on Dag values: shapes, the portable order, every rejection.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "nps/proto/dag.hpp"

using namespace nps::proto;

namespace {

// nodes: {id, input_from...}; edges: {from, to}.
Dag make_dag(const std::vector<std::vector<std::string>>& nodes, const std::vector<std::pair<std::string, std::string>>& edges = {})
{
    Dag dag;
    for (const auto& spec : nodes) {
        DagNode node;
        node.id = spec.front();
        node.action = "nwp://example.com/node/invoke";
        node.agent = "urn:nps:agent:example.com:w";
        node.input_from.assign(spec.begin() + 1, spec.end());
        dag.nodes.push_back(node);
    }
    for (const auto& [from, to] : edges)
        dag.edges.push_back(DagEdge{from, to});
    return dag;
}

Dag chain(std::size_t n)
{
    std::vector<std::vector<std::string>> nodes;
    for (std::size_t i = 0; i < n; ++i) {
        nodes.push_back({"n_" + std::to_string(i)});
        if (i > 0)
            nodes.back().push_back("n_" + std::to_string(i - 1));
    }
    return make_dag(nodes);
}

nps::Error rejected(const Dag& dag)
{
    auto result = validate_dag(dag);
    REQUIRE_FALSE(result.has_value());
    return result.error();
}

using Strings = std::vector<std::string>;
using Indexes = std::vector<std::vector<std::size_t>>;

}  // namespace

TEST_CASE("dag: linear chain")
{
    auto shape = validate_dag(make_dag({{"fetch"}, {"analyze", "fetch"}, {"report", "analyze"}}));
    REQUIRE(shape);
    CHECK(shape->topological_order == Strings{"fetch", "analyze", "report"});
    CHECK(shape->roots == Strings{"fetch"});
    CHECK(shape->terminals == Strings{"report"});
    CHECK(shape->predecessors == Indexes{{}, {0}, {1}});
    CHECK(shape->successors == Indexes{{1}, {2}, {}});
}

TEST_CASE("dag: diamond with lexicographic tie-break")
{
    // Declared out of order on purpose: the order must not depend on it.
    auto shape = validate_dag(make_dag(
        {{"merge", "analyze_b", "analyze_a"}, {"analyze_b", "fetch"}, {"analyze_a", "fetch"}, {"fetch"}}));
    REQUIRE(shape);
    CHECK(shape->topological_order == Strings{"fetch", "analyze_a", "analyze_b", "merge"});
    CHECK(shape->roots == Strings{"fetch"});
    CHECK(shape->terminals == Strings{"merge"});
    CHECK(shape->predecessors == Indexes{{}, {0}, {0}, {1, 2}});
    CHECK(shape->successors == Indexes{{1, 2}, {3}, {3}, {}});
}

TEST_CASE("dag: several roots run smallest id first; a lone node is root and terminal")
{
    auto shape = validate_dag(make_dag({{"beta"}, {"alpha"}, {"gamma", "beta"}}));
    REQUIRE(shape);
    CHECK(shape->topological_order == Strings{"alpha", "beta", "gamma"});
    CHECK(shape->roots == Strings{"alpha", "beta"});
    CHECK(shape->terminals == Strings{"alpha", "gamma"});

    auto single = validate_dag(make_dag({{"only"}}));
    REQUIRE(single);
    CHECK(single->roots == Strings{"only"});
    CHECK(single->terminals == Strings{"only"});
}

TEST_CASE("dag: dependencies are the union of input_from and edges")
{
    auto shape = validate_dag(make_dag({{"a"}, {"b"}, {"c", "a"}}, {{"b", "c"}, {"a", "c"}}));
    REQUIRE(shape);
    CHECK(shape->topological_order == Strings{"a", "b", "c"});
    CHECK(shape->predecessors[2] == std::vector<std::size_t>{0, 1});
    CHECK(shape->roots == Strings{"a", "b"});

    auto edges_only = validate_dag(make_dag({{"x"}, {"y"}}, {{"y", "x"}}));
    REQUIRE(edges_only);
    CHECK(edges_only->topological_order == Strings{"y", "x"});
}

TEST_CASE("dag: size limits")
{
    CHECK(validate_dag(chain(32)).has_value());
    const auto too_large = rejected(chain(33));
    CHECK(too_large.code == "NOP-TASK-DAG-TOO-LARGE");
    CHECK(too_large.message == "dag.nodes: 33 nodes, the limit is 32");

    const auto empty = rejected(Dag{});
    CHECK(empty.code == "NOP-TASK-DAG-INVALID");
    CHECK(empty.message == "dag.nodes: the DAG has no nodes");

    Dag many_edges = chain(2);
    many_edges.edges.assign(497, DagEdge{"n_0", "n_1"});
    CHECK(rejected(many_edges).message == "dag.edges: 497 edges, the limit is 496");
}

TEST_CASE("dag: structural rejections name the field")
{
    struct Case {
        Dag dag;
        const char* code;
        const char* message;
    };
    const Case cases[] = {
        {make_dag({{"a"}, {"a"}}), "NOP-TASK-DAG-INVALID",
         "dag.nodes[1].id: duplicate node id 'a' (first declared at dag.nodes[0])"},
        {make_dag({{"a b"}}), "NOP-TASK-DAG-INVALID",
         "dag.nodes[0].id: invalid node id 'a b' (expected 1..128 characters of A-Z a-z 0-9 . _ : -)"},
        {make_dag({{"analyze", "fetch"}}, {{"fetch", "analyze"}}), "NOP-TASK-DAG-INVALID",
         "dag.nodes[0].input_from[0]: unknown node 'fetch'"},
        {make_dag({{"a"}, {"b"}}, {{"a", "ghost"}}), "NOP-TASK-DAG-INVALID", "dag.edges[0].to: unknown node 'ghost'"},
        {make_dag({{"a"}, {"b"}}, {{"ghost", "a"}}), "NOP-TASK-DAG-INVALID",
         "dag.edges[0].from: unknown node 'ghost'"},
        {make_dag({{"a"}, {"b"}}, {{"a", "a"}}), "NOP-TASK-DAG-INVALID", "dag.edges[0]: self-loop on node 'a'"},
        {make_dag({{"a", "a"}}), "NOP-TASK-DAG-INVALID", "dag.nodes[0].input_from[0]: node 'a' depends on itself"},
        {make_dag({{"a"}, {"b", "a", "a"}}), "NOP-TASK-DAG-INVALID",
         "dag.nodes[1].input_from[1]: duplicate dependency 'a'"},
        {make_dag({{"a"}, {"b"}}, {{"a", "b"}, {"a", "b"}}), "NOP-TASK-DAG-INVALID",
         "dag.edges[1]: duplicate edge 'a' -> 'b'"},
        {make_dag({{"a", "c"}, {"b", "a"}, {"c", "b"}}), "NOP-TASK-DAG-CYCLE",
         "dag: the dependencies form a cycle; nodes on or after it: 'a', 'b', 'c'"},
        {make_dag({{"root"}, {"x", "root", "y"}, {"y", "x"}, {"after", "y"}}), "NOP-TASK-DAG-CYCLE",
         "dag: the dependencies form a cycle; nodes on or after it: 'after', 'x', 'y'"},
        {make_dag({{"a"}, {"b"}}, {{"a", "b"}, {"b", "a"}}), "NOP-TASK-DAG-CYCLE",
         "dag: the dependencies form a cycle; nodes on or after it: 'a', 'b'"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.message);
        const auto error = rejected(c.dag);
        CHECK(error.code == c.code);
        CHECK(error.message == c.message);
    }
}

TEST_CASE("dag: a pure cycle reports CYCLE, not a missing root")
{
    CHECK(rejected(make_dag({{"a", "c"}, {"b", "a"}, {"c", "b"}}, {{"a", "b"}, {"b", "c"}, {"c", "a"}})).code ==
          "NOP-TASK-DAG-CYCLE");
}

TEST_CASE("delegation chain length")
{
    CHECK(validate_delegation_chain(1).has_value());
    CHECK(validate_delegation_chain(3).has_value());
    auto too_deep = validate_delegation_chain(4);
    REQUIRE_FALSE(too_deep.has_value());
    CHECK(too_deep.error().code == "NOP-DELEGATE-CHAIN-TOO-DEEP");
    CHECK(too_deep.error().message == "delegation chain: 4 entities, the limit is 3");
    auto zero = validate_delegation_chain(0);
    REQUIRE_FALSE(zero.has_value());
    CHECK(zero.error().code.empty());
}
