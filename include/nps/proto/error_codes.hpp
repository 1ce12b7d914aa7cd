// SPDX-License-Identifier: Apache-2.0
// The one table of protocol error codes the runner emits: each code with its
// NPS status and HTTP status (spec digest §6; status-codes.md v0.7;
// transport-profile §5 pins). The API uses it for every error body.
#pragma once

#include <optional>
#include <string_view>

namespace nps::proto {

struct ErrorCodeInfo {
    std::string_view code;        // "NOP-CLAIM-CONFLICT"
    std::string_view nps_status;  // "NPS-CLIENT-CONFLICT"
    int http_status;              // 409
};

// nullopt for a code not in the table.
std::optional<ErrorCodeInfo> lookup_error_code(std::string_view code);

// The NPS status and HTTP code for an error code; unknown or empty codes map
// to NPS-SERVER-INTERNAL / 500 (a failure we did not classify).
ErrorCodeInfo classify_error_code(std::string_view code);

// Every entry, for tests and documentation.
const ErrorCodeInfo* error_code_table_begin();
const ErrorCodeInfo* error_code_table_end();

}  // namespace nps::proto
