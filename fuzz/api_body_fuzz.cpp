// SPDX-License-Identifier: Apache-2.0
// Fuzzes what the API does with an untrusted request body before it reaches
// the store: JSON parsing with its depth bound, and every field reader.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nps/api/json_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto body = nps::api::parse_json_object(text);
    if (!body)
        return 0;
    for (const char* field : {"runner_nid", "task_id", "dedup_key", "state", "lease_seconds", "attempts"}) {
        (void)nps::api::optional_string(*body, field, 256);
        (void)nps::api::optional_uint32(*body, field);
    }
    (void)nps::api::error_response("NOP-CLAIM-CONFLICT", body->dump());
    return 0;
}
