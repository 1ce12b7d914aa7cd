// SPDX-License-Identifier: Apache-2.0
// Internal to net/: the walk of one guarded request through its redirects —
// deadlines, which hop gets which method and body, which answers are
// followed — without the I/O, so the blocking client (guarded_fetch.cpp) and
// the loop-driven one (async_fetch.cpp) follow the same rules. Each hop:
// admit(url()) with time_left(), run hop_options(admitted), then after().
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "nps/net/guarded_fetch.hpp"
#include "hop.hpp"

namespace nps::net::detail {

// The validators of a conditional GET (guarded_get's revalidation).
struct Validators {
    std::string url;
    std::optional<std::string> if_none_match;
    std::optional<std::string> if_modified_since;
};

class GuardedWalk {
public:
    GuardedWalk(GuardedRequest request, std::optional<Validators> validators);

    // Reads the CA file; call once first.
    Result<void> begin();
    const GuardedRequest& request() const { return request_; }
    // The URL of the next hop and the name it is checked under.
    const std::string& url() const { return url_; }
    std::string what() const;
    // Milliseconds left for the next step; an error when none are.
    Result<int> time_left() const;
    HopOptions hop_options(const AdmittedDestination& admitted, long timeout_ms) const;
    // The hop's answer: the final response, or nullopt when it is followed
    // (url() is then the next hop's).
    Result<std::optional<FetchedResponse>> after(HopResult result);
    // An error "<what>: <problem>".
    Error fail(const std::string& problem) const;

private:
    GuardedRequest request_;
    std::optional<Validators> validators_;
    std::chrono::steady_clock::time_point deadline_;
    std::shared_ptr<const std::string> bundle_;
    std::string url_;
    unsigned hop_ = 0;
    std::vector<std::string> redirects_;
};

}  // namespace nps::net::detail

namespace nps::net::detail {

// trusted_request's hop (reads the CA file) and its response.
Result<HopOptions> trusted_hop_options(const TrustedRequest& request);
FetchedResponse trusted_response(HopResult result, const std::string& url);

}  // namespace nps::net::detail
