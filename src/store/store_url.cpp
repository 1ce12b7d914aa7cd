// SPDX-License-Identifier: Apache-2.0
// Store URLs (store.hpp): which backend a URL selects, and the URL as it may
// be shown. Plain text handling, no database client: the configuration
// checks URLs with these.
#include <regex>

#include "nps/store/store.hpp"

namespace nps::store {

bool is_postgres_url(std::string_view url)
{
    return url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0;
}

std::string redact_store_url(const std::string& url)
{
    // URI: scheme://user:password@host → scheme://user:***@host; a password=
    // query parameter or key=value pair → password=***.
    // libpq ends the user:password part of a URI at '@' or '/' only: a
    // password may hold '?'.
    static const std::regex uri_password(R"(^([a-z]+://[^:/@]*):[^@/]*@)", std::regex::icase);
    static const std::regex query_password(R"(([?&]password=)[^&]*)", std::regex::icase);
    static const std::regex kv_password(R"((^|\s)password\s*=\s*('(\\.|[^'])*'|\S+))", std::regex::icase);
    std::string out = std::regex_replace(url, uri_password, "$1:***@");
    out = std::regex_replace(out, query_password, "$1***");
    return std::regex_replace(out, kv_password, "$1password=***");
}

}  // namespace nps::store
