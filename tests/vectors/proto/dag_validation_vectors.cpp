// SPDX-License-Identifier: Apache-2.0
// nop/dag_validation_vectors.json: every vector, through both the full
// TaskFrame decoder and validate_dag on a Dag built directly from the input.
#include <iostream>

#include "nps/proto/dag.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/task_frame.hpp"
#include "vector_harness.hpp"

using namespace nps::proto;
using namespace nps::test::vectors;

namespace {

Json failure(const nps::Error& error)
{
    return Json{{"valid", false}, {"error", error.code}, {"status", std::string(classify_error_code(error.code).nps_status)}};
}

Json outcome(const nps::Result<DagShape>& shape)
{
    if (!shape)
        return failure(shape.error());
    return Json{{"valid", true},
                {"node_count", shape->topological_order.size()},
                {"roots", shape->roots},
                {"terminals", shape->terminals}};
}

// The input's dag as a Dag value, read leniently (the decoder is the strict path).
Dag dag_from_json(const Json& dag_json)
{
    Dag dag;
    for (const Json& n : dag_json.value("nodes", Json::array())) {
        DagNode node;
        node.id = n.value("id", "");
        node.action = n.value("action", "");
        node.agent = n.value("agent", "");
        if (n.contains("input_from") && n["input_from"].is_array())
            node.input_from = n["input_from"].get<std::vector<std::string>>();
        dag.nodes.push_back(std::move(node));
    }
    for (const Json& e : dag_json.value("edges", Json::array()))
        dag.edges.push_back(DagEdge{e.value("from", ""), e.value("to", "")});
    return dag;
}

// dag_generator {kind: "linear_chain", node_count_to_generate, id_prefix}:
// p0 → p1 → … with both input_from and edges.
std::optional<Json> generate_dag(const Json& generator, std::vector<std::string>& reasons)
{
    for (auto& r : unknown_keys(generator, {"kind", "node_count_to_generate", "id_prefix"}))
        reasons.push_back("dag_generator: " + r);
    if (generator.value("kind", "") != "linear_chain") {
        reasons.push_back("dag_generator.kind " + generator.value("kind", Json()).dump() + " is not supported");
        return std::nullopt;
    }
    const auto count = generator.value("node_count_to_generate", 0);
    const std::string prefix = generator.value("id_prefix", "n_");
    Json dag{{"nodes", Json::array()}, {"edges", Json::array()}};
    for (int i = 0; i < count; ++i) {
        const std::string id = prefix + std::to_string(i);
        Json node{{"id", id},
                  {"action", "nwp://vectors.example/chain/invoke"},
                  {"agent", "urn:nps:agent:vectors.example:worker" + std::to_string(i)}};
        if (i > 0) {
            const std::string previous = prefix + std::to_string(i - 1);
            node["input_from"] = Json::array({previous});
            dag["edges"].push_back(Json{{"from", previous}, {"to", id}});
        }
        dag["nodes"].push_back(node);
    }
    return dag;
}

std::vector<std::string> check_dag(const Json& dag_json, const Json& expected)
{
    std::vector<std::string> reasons;
    // Path 1: the TaskFrame decoder (field checks, then validate_dag).
    const Json frame{{"task_id", "vector-task"}, {"dag", dag_json}};
    const auto decoded = decode_task_frame(frame.dump());
    const Json via_decoder = decoded ? outcome(validate_dag(decoded->dag)) : failure(decoded.error());
    for (auto& d : compare_expected(expected, via_decoder))
        reasons.push_back("decode_task_frame: " + d);
    // Path 2: validate_dag on the Dag value.
    for (auto& d : compare_expected(expected, outcome(validate_dag(dag_from_json(dag_json)))))
        reasons.push_back("validate_dag: " + d);
    return reasons;
}

std::vector<std::string> check_delegation_chain(const Json& chain, const Json& expected)
{
    std::vector<std::string> reasons;
    if (!chain.is_array() || chain.empty())
        return {"delegation_chain is not a non-empty array"};
    // The entries must be levels 1..n in order; the length is what is checked.
    for (std::size_t i = 0; i < chain.size(); ++i)
        if (chain[i].value("level", 0) != static_cast<int>(i + 1))
            reasons.push_back("delegation_chain[" + std::to_string(i) + "].level is not " + std::to_string(i + 1));
    const auto result = validate_delegation_chain(chain.size());
    const Json actual = result ? Json{{"valid", true}} : failure(result.error());
    for (auto& d : compare_expected(expected, actual))
        reasons.push_back("validate_delegation_chain: " + d);
    return reasons;
}

}  // namespace

int main()
{
    return run_vector_file("nop/dag_validation_vectors.json",
                           [](Report&, const std::string& id, const Json& vector) -> std::optional<std::vector<std::string>> {
        if (!id.starts_with("nop.dag."))
            return std::vector<std::string>{"unknown vector id (this file holds nop.dag.* vectors)"};
        const Json& input = vector["input"];
        const Json& expected = vector["expected"];
        std::vector<std::string> reasons = unknown_keys(input, {"dag", "dag_generator", "delegation_chain"});
        if (input.size() != 1)
            reasons.push_back("input must hold exactly one of dag, dag_generator, delegation_chain");
        if (!reasons.empty())
            return reasons;
        if (vector.value("kind", "") == "positive" && expected.value("valid", false) != true)
            reasons.push_back("a positive vector must expect valid: true");

        std::vector<std::string> more;
        if (input.contains("dag")) {
            more = check_dag(input["dag"], expected);
        } else if (input.contains("dag_generator")) {
            if (auto dag = generate_dag(input["dag_generator"], reasons))
                more = check_dag(*dag, expected);
        } else {
            more = check_delegation_chain(input["delegation_chain"], expected);
        }
        reasons.insert(reasons.end(), more.begin(), more.end());
        return reasons;
    });
}
