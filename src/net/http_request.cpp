// SPDX-License-Identifier: Apache-2.0
// The request and response values the HTTP server hands to handlers
// (http_server.hpp), apart from the server itself.
#include "nps/net/http_server.hpp"

namespace nps::net {

const std::string& HttpRequest::header(const std::string& lowercase_name) const
{
    static const std::string empty;
    const auto it = headers.find(lowercase_name);
    return it == headers.end() ? empty : it->second;
}

}  // namespace nps::net
