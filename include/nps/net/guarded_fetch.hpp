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
//
// guarded_request() and trusted_request() are the same with any method and a
// body (task callbacks, result reports), returning any final HTTP status for
// the caller to judge, and abortable through a cancel flag.
#pragma once

#include <atomic>
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

// Which redirects guarded_request() follows; every target is admitted by the
// guard again before it is contacted, and counts against max_redirects.
enum class RedirectRule {
    all,                // 301 302 303 307 308, each followed with a GET (guarded_get's rule)
    method_preserving,  // 307 308 only, with the same method, headers and body; other 3xx are answers
    none,               // every 3xx is the answer
};

struct GuardedRequest {
    std::string method = "GET";
    std::string url;
    std::string what = "URL";                  // names the URL in errors ("callback_url")
    const DestinationGuard* guard = nullptr;   // required
    std::optional<std::string> ca_file{};      // PEM CAs trusted besides the system store
    FetchLimits limits{};                      // max_body_bytes caps the response body
    RedirectRule redirects = RedirectRule::none;
    std::vector<std::pair<std::string, std::string>> headers{};  // sent on every hop
    std::optional<std::string> body{};         // sent on every hop (Content-Length; no 100-continue)
    const std::atomic<bool>* cancel = nullptr; // when it becomes true the transfer is aborted (an error)
};

// Any final HTTP status is a response (a 3xx the rule does not follow
// included; redirects[] lists those followed). Guard refusals carry the
// guard's code; transport failures, a redirect without Location, too many
// redirects, an oversize body, the time limit and cancellation are errors
// naming the URL.
Result<FetchedResponse> guarded_request(const GuardedRequest& request);

struct TrustedGetRequest {
    std::string url;
    std::optional<std::string> ca_file{};
    int timeout_ms = 10'000;
    std::size_t max_body_bytes = limits::kMaxNdpRegistryAnswerBytes;
};

// Any HTTP status is a response; transport failures are errors.
Result<FetchedResponse> trusted_get(const TrustedGetRequest& request);

// An operator-configured service (a task store): http or https, no
// destination rules, no redirects (a 3xx is the answer), no environment proxy.
struct TrustedRequest {
    std::string method = "GET";
    std::string url;
    std::optional<std::string> ca_file{};
    int timeout_ms = 10'000;
    std::size_t max_body_bytes = limits::kMaxNdpRegistryAnswerBytes;  // of the response
    std::vector<std::pair<std::string, std::string>> headers{};
    std::optional<std::string> body{};
    const std::atomic<bool>* cancel = nullptr;
};

// Any HTTP status is a response; transport failures, the time limit and
// cancellation are errors naming the URL.
Result<FetchedResponse> trusted_request(const TrustedRequest& request);

}  // namespace nps::net
