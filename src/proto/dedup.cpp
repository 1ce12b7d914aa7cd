// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/dedup.hpp"

#include "nps/base/digest.hpp"

namespace nps::proto {

std::string dag_hash_from_canonical(std::string_view canonical_dag_json)
{
    return sha256_hex(canonical_dag_json);
}

std::string dedup_key(std::string_view task_id, std::string_view dag_hash)
{
    std::string input;
    input.reserve(task_id.size() + 1 + dag_hash.size());
    input.append(task_id);
    input.push_back('\0');
    input.append(dag_hash);
    return sha256_hex(input);
}

}  // namespace nps::proto
