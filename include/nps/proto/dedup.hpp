// SPDX-License-Identifier: Apache-2.0
// The claim dedup key (NPS-5 §3.5.5, §8.1; CR-0007 §4.1):
//   dedup_key = lowercase hex SHA-256( utf8(task_id) ‖ 0x00 ‖ utf8(dag_hash) )
// The spec leaves dag_hash undefined (digest §9.3); ours is the lowercase hex
// SHA-256 of the RFC 8785 canonical form of the TaskFrame's `dag` object
// (docs/protocol-choices.md).
#pragma once

#include <string>
#include <string_view>

namespace nps::proto {

// dag_hash from the already-canonical (JCS) text of `dag`.
std::string dag_hash_from_canonical(std::string_view canonical_dag_json);

std::string dedup_key(std::string_view task_id, std::string_view dag_hash);

}  // namespace nps::proto
