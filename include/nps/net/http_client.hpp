// SPDX-License-Identifier: Apache-2.0
// A blocking HTTP client on libcurl, for the CLI and tests. Reaches the
// daemon over TCP or its unix socket.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <utility>

#include "nps/base/result.hpp"

namespace nps::net {

// A POST/PUT/PATCH without a body sends an empty one (Content-Length: 0); a
// body without a Content-Type header is sent as application/json. No
// "Expect: 100-continue" unless the caller sets an Expect header. Requests to
// a loopback host or over a unix socket bypass any environment proxy.
struct ClientRequest {
    std::string method = "GET";
    std::string url;                          // "http://127.0.0.1:17437/v1/tasks" (host ignored over a unix socket)
    std::optional<std::string> unix_socket;   // connect here instead of the URL's host
    std::vector<std::pair<std::string, std::string>> headers;
    std::optional<std::string> body;
    long timeout_ms = 30000;                  // whole request incl. connect; <= 0: no limit
    std::size_t max_response_bytes = 16 << 20;
    // When set, the request is abandoned (an error) within about a second
    // of *cancel becoming true: a long-poll that must end at shutdown.
    const std::atomic<bool>* cancel = nullptr;
    // Set: a 2xx answer's body is handed over piece by piece as it arrives
    // (a followed feed) instead of being collected; returning false ends the
    // transfer early, which still counts as a response. Other answers are
    // collected into body as usual.
    std::function<bool(std::string_view piece)> on_data;
};

struct ClientResponse {
    long status = 0;
    std::map<std::string, std::string> headers;  // lower-cased names
    std::string body;
};

// Transport failures (refused, timeout, oversize response) are errors naming
// the URL; any HTTP status is a successful response.
Result<ClientResponse> http_request(const ClientRequest& request);

// Percent-encodes one path segment or query value (RFC 3986 unreserved kept).
std::string url_encode(const std::string& text);

}  // namespace nps::net
