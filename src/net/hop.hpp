// SPDX-License-Identifier: Apache-2.0
// Internal to net/: one HTTP request/response exchange ("hop") on a libcurl
// easy handle, with the policy of guarded_fetch.hpp (protocols, no proxy,
// TLS 1.2+, pinned addresses and the socket check, body cap, time limit).
// prepare() configures the handle; the caller runs it — curl_easy_perform
// (perform_hop) or a CurlMulti (async_fetch.cpp) — and finish() reads the
// outcome. Shared by the blocking and the loop-driven clients so both apply
// the very same options.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/net/curl_easy.hpp"
#include "nps/net/destination_guard.hpp"

namespace nps::net::detail {

struct HopOptions {
    std::string method = "GET";
    std::optional<std::string> body{};                  // none: no body
    const std::atomic<bool>* cancel = nullptr;          // blocking hops: aborts when it becomes true
    std::string url;
    const char* protocols = "https";
    std::optional<std::string> resolve_entry{};         // "host:port:addr,addr"
    std::optional<std::vector<proto::IpAddress>> allowed{};  // none: any address
    std::shared_ptr<const std::string> ca_bundle{};     // PEM text; null: curl's defaults
    long timeout_ms = 0;
    std::size_t max_body_bytes = 0;
    std::vector<std::string> header_lines{};
    // A new connection, closed after the hop: nothing of a pinned hop is
    // reused by another (a CurlMulti keeps a connection cache).
    bool fresh_connection = false;
};

struct HopResult {
    long status = 0;
    std::map<std::string, std::string> headers;
    std::string body;
    std::optional<std::string> redirect_url;
};

class Hop {
public:
    static Result<std::unique_ptr<Hop>> prepare(HopOptions options);
    Hop(const Hop&) = delete;
    Hop& operator=(const Hop&) = delete;
    ~Hop();

    CURL* handle() const { return handle_.get(); }
    const std::string& what() const { return what_; }
    // The outcome of the transfer that ended with `rc`.
    Result<HopResult> finish(CURLcode rc);

    struct State;

private:
    explicit Hop(HopOptions options);

    HopOptions options_;
    std::string what_;
    curl::Easy handle_;
    curl::Slist resolve_;
    curl::Slist headers_;
    std::unique_ptr<State> state_;
    char error_buffer_[CURL_ERROR_SIZE] = {};
    curl_blob ca_blob_{};
};

// prepare + curl_easy_perform + finish.
Result<HopResult> perform_hop(HopOptions options);

// The trusted CAs for a configured ca_file: the system bundle plus that file
// (an addition; CURLOPT_CAINFO alone would replace the system store), read
// now. Null without a ca_file: curl's defaults.
Result<std::shared_ptr<const std::string>> ca_bundle(const std::optional<std::string>& ca_file);

// "host:port:addr,addr" for CURLOPT_RESOLVE.
std::string resolve_entry(const AdmittedDestination& admitted);
// A URL from a server, for a message: quoted, bounded, control bytes masked.
std::string shown(std::string_view url);

}  // namespace nps::net::detail
