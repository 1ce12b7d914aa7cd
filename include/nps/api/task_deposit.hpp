// SPDX-License-Identifier: Apache-2.0
// The store deposit of a decoded TaskFrame, shared by the inbox route and
// the upstream npsd puller so both hand the store the same facts.
#pragma once

#include <cstdint>
#include <string>

#include "nps/config/config.hpp"
#include "nps/proto/task_frame.hpp"
#include "nps/store/types.hpp"

namespace nps::api {

// `frame`, deposited as the JSON text `payload`, into inbox `nid`: its
// identity and hashes, its result TTL, and the [inbox] limits of `config`.
// The caller sets content_type, priority and ttl_seconds.
store::DepositRequest task_deposit(const std::string& nid, const proto::TaskFrame& frame, std::string payload,
                                   const config::Config& config);

}  // namespace nps::api
