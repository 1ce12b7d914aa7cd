// SPDX-License-Identifier: Apache-2.0
// Internal: JCS over an already parsed simdjson DOM, so the TaskFrame decoder
// canonicalizes sub-objects (dag, input_mapping, context) without re-parsing.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

#include "nps/base/result.hpp"

namespace nps::proto::detail {

// Appends the RFC 8785 form of `value` to `out`. `omit_member`, when not
// empty, leaves that member out of `value` if `value` is an object (only at
// the top level). `path` prefixes error messages ("dag.nodes[0]").
// Fails with NWP-HTTP-FRAME-BODY-MALFORMED on a duplicate key, nesting deeper
// than limits::kMaxJsonDepth (counting `value` as depth 1), malformed UTF-8
// or a non-finite number.
Result<void> jcs_append(simdjson::dom::element value, std::string& out, std::string_view path = {},
                        std::string_view omit_member = {});

// The canonical text of `value`.
Result<std::string> jcs_of(simdjson::dom::element value, std::string_view path = {});

}  // namespace nps::proto::detail
