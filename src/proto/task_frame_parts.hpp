// SPDX-License-Identifier: Apache-2.0
// Internal: the pieces decode_task_frame() is assembled from, one file each.
#pragma once

#include <string>
#include <string_view>

#include "nps/proto/error_codes.hpp"
#include "nps/proto/json_reader.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::proto::detail {

// The decoders read with the one JSON reader.
using namespace json;

inline constexpr std::string_view kMalformed = code::kNwpHttpFrameBodyMalformed;
inline constexpr std::string_view kDagInvalid = code::kNopTaskDagInvalid;
inline constexpr std::string_view kMappingError = code::kNopInputMappingError;
inline constexpr std::string_view kConditionError = code::kNopConditionEvalError;
inline constexpr std::string_view kCallbackInvalid = code::kNopCallbackInvalid;

// dag_decode.cpp: `dag` → nodes and edges, field by field (no graph checks;
// validate_dag does those). Node count limits are checked before any node.
Result<Dag> decode_dag(element dag);

// node_decode.cpp: one entry of dag.nodes; `path` is "dag.nodes[i]".
Result<DagNode> decode_node(element node, const std::string& path);

// retry_policy_decode.cpp: a node's retry_policy object.
Result<RetryPolicy> decode_retry_policy(element value, const std::string& path);

// mapping_decode.cpp: input_mapping / compensate_params_mapping. Returns the
// canonical (JCS) text of the mapping object.
Result<std::string> decode_mapping(element value, const std::string& path);

// A "$.a.b" path of the supported JSONPath subset, else the problem.
std::optional<std::string> mapping_path_problem(std::string_view path_text);

// context_decode.cpp: the task's context object; returns its canonical text.
Result<std::string> decode_context(element value);

}  // namespace nps::proto::detail
