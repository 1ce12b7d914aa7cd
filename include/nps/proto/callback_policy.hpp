// SPDX-License-Identifier: Apache-2.0
// Task callback destinations (NPS-5 §9.4). A callback may go only to an
// https URL with a host and no user-info, and only to public addresses:
// every DNS answer must be public (fail closed), and each redirect hop is
// checked again as a new destination. Every failure is NOP-CALLBACK-INVALID.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "nps/base/result.hpp"

namespace nps::proto {

// The static checks, done when a TaskFrame is decoded: length ≤
// limits::kMaxUrlChars, scheme https, a host, no user-info, the host not
// "localhost"/"*.localhost", not an ambiguous numeric host, an IP-literal host
// public, a DNS name made of valid labels. `what` names the URL in messages
// ("callback_url", "callback redirect").
Result<void> check_callback_url(std::string_view url, std::string_view what = "callback_url");

// One hop of a callback delivery: the static checks, then the addresses the
// host resolved to (textual literals) must be non-empty and all public. The
// caller connects only to one of these addresses, and calls this again for
// every redirect target with that target's own answers.
Result<void> check_callback_destination(std::string_view url, std::span<const std::string> resolved_ips,
                                        std::string_view what = "callback_url");

}  // namespace nps::proto
