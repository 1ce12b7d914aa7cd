// SPDX-License-Identifier: Apache-2.0
// The libcurl easy-handle plumbing every HTTP client of the runner shares
// (net/http_client, net/guarded_fetch, image/registry_http): one process-wide
// curl_global_init (it is not thread-safe, so it must happen exactly once,
// whichever client runs first), RAII handles, option setting that keeps the
// first failure, and the response-header collector. Each client keeps its
// own policy (protocols, redirects, proxies, TLS, body handling).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "nps/base/result.hpp"
#include "nps/lazy/curl.hpp"

namespace nps::net::curl {

// curl_global_init(CURL_GLOBAL_DEFAULT), once per process; its failure, every time.
Result<void> global_init();

struct EasyDeleter {
    void operator()(CURL* handle) const noexcept { sym_curl_easy_cleanup(handle); }
};
struct SlistDeleter {
    void operator()(curl_slist* list) const noexcept { sym_curl_slist_free_all(list); }
};
using Easy = std::unique_ptr<CURL, EasyDeleter>;
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

// A fresh easy handle, after global_init(); errors start with `what`
// ("GET 'https://…' failed: …").
Result<Easy> new_easy(const std::string& what);

// Appends a header line ("Name: value"); false when out of memory.
bool append(Slist& list, const std::string& line);

// curl_easy_setopt that remembers the first failing option.
class Setter {
public:
    explicit Setter(CURL* handle) : handle_(handle) {}
    template <class T>
    void operator()(CURLoption option, T value)
    {
        const CURLcode rc = sym_curl_easy_setopt(handle_, option, value);
        if (rc != CURLE_OK && error_ == CURLE_OK)
            error_ = rc;
    }
    CURLcode error() const { return error_; }

private:
    CURL* handle_;
    CURLcode error_ = CURLE_OK;
};

// One line from CURLOPT_HEADERFUNCTION into `headers`: names lower-cased,
// values trimmed, a repeated name's values joined with ", "; a status line
// ("HTTP/…", the start of a new response after a redirect or 100 Continue)
// clears what was collected, so only the final response's headers remain.
void collect_header(std::map<std::string, std::string>& headers, std::string_view line);

// The URL's host, or "" when curl cannot parse the URL.
std::string url_host(const std::string& url);

// Where this libcurl finds the system CA bundle, or "".
std::string default_ca_path();

// The CAs to trust (for CURLOPT_CAINFO_BLOB): the system bundle followed by
// the PEM file `ca_file`, which is called `what` in errors. libcurl's CAINFO
// would replace the system bundle; operators expect an addition. Fails when
// the file cannot be read, is over `max_bytes` or holds no PEM certificate.
Result<std::string> ca_bundle_with(const std::string& ca_file, std::size_t max_bytes, const std::string& what);

}  // namespace nps::net::curl
