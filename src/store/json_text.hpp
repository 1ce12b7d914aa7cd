// SPDX-License-Identifier: Apache-2.0
// Internal to store/: the JSON text both stores write into event details.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace nps::store::detail {

// Compact JSON text; invalid UTF-8 in a string is replaced (U+FFFD) rather
// than thrown on, so an odd runner NID cannot make an event fail.
std::string json_text(const nlohmann::json& value);

}  // namespace nps::store::detail
