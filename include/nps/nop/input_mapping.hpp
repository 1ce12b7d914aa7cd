// SPDX-License-Identifier: Apache-2.0
// input_mapping and compensate_params_mapping (NPS-5 §3.1.3, §3.1.6): the
// params a node's attempt (or its compensation) is dispatched with.
//
// A mapping is a JSON object (DagNode::input_mapping_json /
// compensate_params_mapping_json, already checked by the decoder). Each
// member becomes one param:
//   - a string starting with "$" is a JSONPath (json_path.hpp) resolved
//     below `root` (the spec's paths start with "$.");
//   - an array is the array of its items, each path resolved and each other
//     item copied, in the order written (no flattening: ["$.a.x","$.b.y"]
//     with x = [1] and y = 2 gives [[1], 2]);
//   - any other value — a string not starting with "$", a number, boolean,
//     null or object — is a literal copied unchanged, so a root node can be
//     given {"city": "Oslo"} as it is.
// A path that resolves to nothing or to null is NOP-INPUT-MAPPING-ERROR (the
// portable runner's rule), the message naming the param and the path:
//   input_mapping.value: "$.fetch.value" resolved to nothing
//
// For input_mapping, root is the object {node_id: result} of the completed
// nodes the node may read; for compensate_params_mapping, root is the node's
// own stored result ("$.charge_id" reads result.charge_id).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/nop/json_value.hpp"

namespace nps::nop {

// `what` names the mapping in messages ("input_mapping").
Result<Json> apply_mapping(std::string_view mapping_json, const Json& root, std::string_view what);

// The root object of an input_mapping: {node_id: result} for every entry.
Json mapping_root(const Snapshot& results);

// Params of a node without input_mapping (docs/dag-engine.md): no
// dependencies → {}; one dependency that completed with an object result →
// that object (the SDK's pass-through of a single upstream's output); any
// other case → {"<dep>": result, …} over the dependencies that completed
// (skipped ones contribute nothing, so a lone skipped dependency gives {}).
// `dependencies` are the node's direct dependencies; `results` holds the
// completed ones.
Json default_params(const std::vector<std::string>& dependencies, const Snapshot& results);

}  // namespace nps::nop
