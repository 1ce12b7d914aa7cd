// SPDX-License-Identifier: Apache-2.0
// `task show --graph` and `--dot`: a task's DAG as text or as Graphviz DOT,
// from the answer of GET /v1/tasks/{id} (its `dag`, `nodes` and `events`).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nps/cli/output.hpp"

namespace nps::cli {

struct DagPictureNode {
    std::string id;
    std::string state;              // its record's, else PENDING (NOT RUN once the task ended)
    std::size_t layer = 0;          // the longest path to it from a root
    std::vector<std::string> after; // its predecessors
    std::size_t compensation_step = 0;  // 1, 2, … in the saga's order; 0 if not compensated
};

struct DagPicture {
    std::string task_id;
    std::string task_state;
    std::vector<DagPictureNode> nodes;  // by layer, then in the frame's order
    std::size_t edges = 0;
};

// Edges are the frame's `edges` and each node's `input_from`.
DagPicture dag_picture(const nlohmann::json& task);

// One line per node: layer, id, state, predecessors, compensation step.
std::string render_text(const DagPicture& picture, const Output& out);
// A `digraph` with the states as labels and colours.
std::string render_dot(const DagPicture& picture);

}  // namespace nps::cli
