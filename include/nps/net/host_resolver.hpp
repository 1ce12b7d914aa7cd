// SPDX-License-Identifier: Apache-2.0
// Name resolution for outbound requests that must check every address before
// connecting (destination_guard.hpp). A seam: tests and the conformance
// vectors supply fixed answers; the daemon uses the system resolver.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/proto/ip_policy.hpp"

namespace nps::net {

class HostResolver {
public:
    virtual ~HostResolver() = default;
    // Every A and AAAA answer for `host` (a DNS name, not a literal), without
    // duplicates, in the resolver's order. No answer, NXDOMAIN, a resolver
    // failure or no result within timeout_ms is an error naming the host.
    virtual Result<std::vector<proto::IpAddress>> resolve(const std::string& host, int timeout_ms) const = 0;
};

// getaddrinfo(3) (AF_UNSPEC, no AI_ADDRCONFIG: every answer is checked) on a
// helper thread, so a hung resolver costs the caller at most timeout_ms.
const HostResolver& system_resolver();

// Fixed answers, for tests: host (compared case-insensitively, a trailing dot
// ignored) → addresses; an unknown host fails like NXDOMAIN.
class StaticResolver final : public HostResolver {
public:
    // Textual addresses, as a vector lists them; resolve() fails on an entry
    // that is not an IP literal (never skips it: that could hide a bad answer).
    void add(const std::string& host, const std::vector<std::string>& addresses);
    Result<std::vector<proto::IpAddress>> resolve(const std::string& host, int timeout_ms) const override;

private:
    std::map<std::string, std::vector<std::string>> answers_;
};

}  // namespace nps::net
