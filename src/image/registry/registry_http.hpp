// SPDX-License-Identifier: Apache-2.0
// Internal to image/: one HTTP GET to a registry or token service on the
// libcurl easy interface, with what pulling needs and net::http_request
// does not offer: the body of a success streamed to a sink while it
// arrives, redirects followed (blob stores and CDNs) but never from https
// down to http unless allowed, the system CAs plus a configured bundle,
// a stall limit instead of a total timeout for big downloads, and
// transport failures classified as transient or not.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"

namespace nps::image::detail {

// Settings shared by every request of one pull.
struct HttpSession {
    std::string ca_pem;             // trusted CAs (system bundle + ca_file); empty: libcurl's default
    bool allow_plain_http = false;  // redirects may lead to http:// (insecure registries only)
};

using BodySink = std::function<Result<void>(std::string_view chunk)>;

struct HttpGet {
    std::string url;
    std::vector<std::string> headers;   // "Name: value"
    std::size_t max_body_bytes = 0;     // a buffered 2xx body longer than this is an error
    long timeout_ms = 0;                // whole request; 0: none (the stall limit still applies)
    BodySink sink;                      // when set, a 2xx body streams here instead of being buffered
};

struct HttpAnswer {
    long status = 0;
    std::map<std::string, std::string> headers;  // of the final response; names lowercased, repeats joined by ", "
    std::string body;                            // a non-2xx body is cut at limits::kMaxRegistryErrorBodyBytes
    std::string url;                             // after redirects
};

struct HttpOutcome {
    std::optional<HttpAnswer> answer;  // any HTTP status
    Error error{};                     // when there is no answer
    bool transient = false;            // connection refused, reset, timed out…: worth another try
    enum class Tls { ok, handshake, certificate } tls = Tls::ok;  // what a TLS failure was about
};

HttpOutcome http_get(const HttpSession& session, const HttpGet& request);

// What a Retry-After header asks for, in milliseconds (delay-seconds or an
// HTTP date); nullopt when absent or unreadable. Not capped here.
std::optional<long> retry_after_ms(const HttpAnswer& answer);

}  // namespace nps::image::detail
