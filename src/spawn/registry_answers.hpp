// SPDX-License-Identifier: Apache-2.0
// Internal: the answers of the registries the resolver asks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "nps/base/result.hpp"
#include "nps/store/types.hpp"

namespace nps::spawn::detail {

// GET <registry_url>/v1/ndp/resolve?nid= (this runner's API shape):
// {"nid": NID, "activation_mode"?: "ephemeral"|"resident"|"hybrid",
//  "spawn_spec_ref"?: string, "ttl"?: uint32|null, …}. `nid` must be the
// NID asked for; ttl 0 means offline (refused). Other members are ignored.
Result<store::Announce> decode_registry_announce(std::string_view json_text, const std::string& nid);

struct NwpEndpoint {
    std::string host;
    std::uint16_t port = 0;
};

// GET <nwp_resolver_url>/v1/resolve?target= (the nps-registry shape):
// {"target": URL, "resolved": {"host": string, "port": 1..65535, …}}. The
// host must be a DNS name or an IP literal (brackets optional for IPv6).
Result<NwpEndpoint> decode_nwp_resolution(std::string_view json_text);

}  // namespace nps::spawn::detail
