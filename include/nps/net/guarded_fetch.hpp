// SPDX-License-Identifier: Apache-2.0
// Outbound HTTPS GET to an untrusted destination (remote SpawnSpecs), on
// libcurl, under the destination guard:
//  - every hop (the URL and each redirect target) is admitted by the guard
//    first: https only, no user-info, the host resolved and every address
//    allowed (destination_guard.hpp);
//  - the connection is pinned to the admitted addresses (CURLOPT_RESOLVE)
//    while SNI and certificate verification use the URL's host name, and a
//    socket callback refuses any other address as a second line of defence;
//  - redirects (301 302 303 307 308) are followed by this code, not by curl,
//    at most max_redirects of them;
//  - the body is capped at max_body_bytes (declared length and bytes read),
//    the whole fetch (DNS, connects, redirects, body) at timeout_ms;
//  - no proxy, no cookies, no compression, TLS 1.2 or newer, peer and host
//    verified against the system CA store plus ca_file (when set; read on
//    every call, so a replaced file takes effect at once).
// trusted_get() is for services the operator configured (an NDP registry):
// http or https, no destination rules, no redirects.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nps/base/limits.hpp"
#include "nps/base/result.hpp"
#include "nps/net/destination_guard.hpp"

namespace nps::net {

struct FetchLimits {
    int timeout_ms = static_cast<int>(limits::kDefaultSpawnFetchTimeoutSeconds) * 1000;
    std::size_t max_body_bytes = limits::kDefaultSpawnSpecBytes;
    unsigned max_redirects = limits::kDefaultSpawnRedirects;
};

struct GuardedGetRequest {
    std::string url;
    std::string what = "URL";                  // names the URL in errors ("spawn_spec_ref")
    const DestinationGuard* guard = nullptr;   // required
    std::optional<std::string> ca_file{};      // PEM CAs trusted besides the system store
    FetchLimits limits{};
    std::vector<std::pair<std::string, std::string>> headers{};  // sent on every hop
    // Revalidation: the validators go only to the hop whose URL equals
    // validators_url (the URL the cached response came from).
    std::string validators_url{};
    std::optional<std::string> if_none_match{};
    std::optional<std::string> if_modified_since{};
};

struct FetchedResponse {
    long status = 0;                                // 2xx, or 304 when validators were sent
    std::map<std::string, std::string> headers{};   // of the final response; lower-case names
    std::string body{};
    std::string final_url{};                        // the URL that answered
    std::vector<std::string> redirects{};           // redirect targets followed, in order
};

// Guard refusals carry the guard's error code; transport failures, too many
// redirects, an oversize body, a timeout or an HTTP status other than 2xx,
// 304 (when asked for) and the redirects above are errors naming the URL.
Result<FetchedResponse> guarded_get(const GuardedGetRequest& request);

struct TrustedGetRequest {
    std::string url;
    std::optional<std::string> ca_file{};
    int timeout_ms = 10'000;
    std::size_t max_body_bytes = limits::kMaxNdpRegistryAnswerBytes;
};

// Any HTTP status is a response; transport failures are errors.
Result<FetchedResponse> trusted_get(const TrustedGetRequest& request);

}  // namespace nps::net
