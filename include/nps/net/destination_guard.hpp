// SPDX-License-Identifier: Apache-2.0
// The destination guard: proto/destination_policy.hpp's rules plus the DNS
// step. admit() checks a URL statically, resolves its host first (an IP
// literal is its own answer) and requires every answer to be allowed, failing
// closed on mixed answers. The caller then connects only to the admitted
// addresses (guarded_fetch.hpp pins them), so what was checked is what is
// reached. Used for remote SpawnSpec fetches and task callbacks alike; call
// admit() again for every redirect hop.
#pragma once

#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/net/host_resolver.hpp"
#include "nps/proto/destination_policy.hpp"

namespace nps::net {

struct AdmittedDestination {
    proto::Destination destination;            // host and port of the URL
    std::vector<proto::IpAddress> addresses;   // every one allowed; connect only to these
};

class DestinationGuard {
public:
    explicit DestinationGuard(proto::DestinationRules rules, const HostResolver& resolver = system_resolver());

    // Every refusal, resolution failures included, carries rules().error_code
    // and a message "<what>: <why>".
    Result<AdmittedDestination> admit(std::string_view url, std::string_view what, int timeout_ms) const;

    const proto::DestinationRules& rules() const { return rules_; }

private:
    proto::DestinationRules rules_;
    const HostResolver& resolver_;
};

}  // namespace nps::net
