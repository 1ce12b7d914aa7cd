// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/error_codes.hpp"

#include <iterator>

namespace nps::proto {

namespace {

constexpr ErrorCodeInfo kTable[] = {
#define NPS_TABLE_ROW(name, text, status_name, http) {code::name, status::status_name, http},
    NPS_ERROR_CODES(NPS_TABLE_ROW)
#undef NPS_TABLE_ROW
};

}  // namespace

std::optional<ErrorCodeInfo> lookup_error_code(std::string_view code)
{
    for (const auto& entry : kTable)
        if (entry.code == code)
            return entry;
    return std::nullopt;
}

ErrorCodeInfo classify_error_code(std::string_view code)
{
    if (auto info = lookup_error_code(code))
        return *info;
    return {code::kNpsServerInternal, status::kNpsServerInternal, 500};
}

const ErrorCodeInfo* error_code_table_begin() { return std::begin(kTable); }
const ErrorCodeInfo* error_code_table_end() { return std::end(kTable); }

}  // namespace nps::proto
