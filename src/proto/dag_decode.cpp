// SPDX-License-Identifier: Apache-2.0
// The TaskFrame `dag` object: {nodes: [...], edges?: [...]}.
#include "nps/base/limits.hpp"
#include "message_text.hpp"
#include "task_frame_parts.hpp"

#include "nps/proto/error_codes.hpp"

namespace nps::proto::detail {

namespace {

Result<std::string> decode_edge_end(const object& edge, std::string_view key, const std::string& path)
{
    const std::string end_path = member_path(path, key);
    const element value = NPS_TRY(required_member(edge, key, kDagInvalid, end_path));
    const std::string_view id = NPS_TRY(read_string(value, kDagInvalid, end_path));
    if (!is_valid_identifier(id))
        return field_error(kDagInvalid, end_path, "invalid node id " + quote_text(id));
    return std::string(id);
}

Result<std::vector<DagEdge>> decode_edges(element value)
{
    const array edges = NPS_TRY(read_array(value, kDagInvalid, "dag.edges"));
    if (edges.size() > limits::kMaxEdges)
        return field_error(kDagInvalid, "dag.edges",
                           std::to_string(edges.size()) + " edges, the limit is " + std::to_string(limits::kMaxEdges));
    std::vector<DagEdge> out;
    std::size_t i = 0;
    for (element item : edges) {
        const std::string path = index_path("dag.edges", i++);
        const object edge = NPS_TRY(read_object(item, kDagInvalid, path));
        NPS_TRY_VOID(check_known_members(edge, {"from", "to"}, kDagInvalid, path));
        DagEdge decoded;
        decoded.from = NPS_TRY(decode_edge_end(edge, "from", path));
        decoded.to = NPS_TRY(decode_edge_end(edge, "to", path));
        out.push_back(std::move(decoded));
    }
    return out;
}

}  // namespace

Result<Dag> decode_dag(element value)
{
    const object obj = NPS_TRY(read_object(value, kDagInvalid, "dag"));
    NPS_TRY_VOID(check_known_members(obj, {"nodes", "edges"}, kDagInvalid, "dag"));
    const element nodes_value = NPS_TRY(required_member(obj, "nodes", kDagInvalid, "dag.nodes"));
    const array nodes = NPS_TRY(read_array(nodes_value, kDagInvalid, "dag.nodes"));
    // Size first, as validate_dag orders it (a 33-node DAG is TOO-LARGE
    // whatever its nodes hold).
    if (nodes.size() == 0)
        return field_error(kDagInvalid, "dag.nodes", "the DAG has no nodes");
    if (nodes.size() > limits::kMaxDagNodes)
        return field_error(code::kNopTaskDagTooLarge, "dag.nodes",
                           std::to_string(nodes.size()) + " nodes, the limit is " +
                               std::to_string(limits::kMaxDagNodes));

    Dag dag;
    std::size_t i = 0;
    for (element node : nodes)
        dag.nodes.push_back(NPS_TRY(decode_node(node, index_path("dag.nodes", i++))));
    if (auto edges = optional_member(obj, "edges"))
        dag.edges = NPS_TRY(decode_edges(*edges));
    return dag;
}

}  // namespace nps::proto::detail
