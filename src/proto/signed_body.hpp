// SPDX-License-Identifier: Apache-2.0
// Internal: the canonical bytes a NIP/NDP signature covers — the RFC 8785
// form of a frame's top-level object with some members left out (and, for
// announces, null members dropped and defaults filled in).
#pragma once

#include <simdjson.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "nps/base/result.hpp"

namespace nps::proto::detail {

struct SignedBodyRules {
    std::initializer_list<std::string_view> excluded;  // members left out
    bool drop_nulls = false;                           // members whose value is null left out
    // Members added when absent (or null): name, JSON literal.
    std::initializer_list<std::pair<std::string_view, std::string_view>> defaults = {};
};

// Fails with `code` when `frame` is not an object, and with the JCS errors
// (NWP-HTTP-FRAME-BODY-MALFORMED: duplicate key, depth, bad UTF-8).
Result<std::string> signed_body(simdjson::dom::element frame, const SignedBodyRules& rules, std::string_view code,
                                std::string_view what);

}  // namespace nps::proto::detail
