// SPDX-License-Identifier: Apache-2.0
// http_get on libcurl: one easy handle per request (a pull makes a handful
// of requests; connection reuse would not pay for the shared state).
#include "registry_http.hpp"

#include <algorithm>
#include <ctime>
#include <memory>

#include "nps/base/limits.hpp"
#include "nps/base/time_format.hpp"
#include "nps/lazy/curl.hpp"
#include "nps/net/curl_easy.hpp"
#include "nps/net/http_server.hpp"  // is_loopback_host

namespace nps::image::detail {

namespace {

// State the callbacks share with http_get.
struct Transfer {
    CURL* curl = nullptr;
    const HttpGet* request = nullptr;
    HttpAnswer* answer = nullptr;
    bool status_known = false;
    bool streaming = false;     // a 2xx body going to the sink
    bool overflow = false;      // a buffered 2xx body over its limit
    bool cut = false;           // an error body cut at its limit
    std::optional<Error> sink_error;
};

// A followed redirect starts a new response: only the last one's headers are kept.
std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user)
{
    const std::size_t bytes = size * count;
    net::curl::collect_header(static_cast<Transfer*>(user)->answer->headers, std::string_view(data, bytes));
    return bytes;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user)
{
    auto* t = static_cast<Transfer*>(user);
    const std::size_t bytes = size * count;
    if (!t->status_known) {
        // The body of the final response (bodies of followed redirects are not delivered).
        sym_curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->answer->status);
        t->status_known = true;
        t->streaming = t->request->sink && t->answer->status >= 200 && t->answer->status < 300;
    }
    const std::string_view chunk(data, bytes);
    if (t->streaming) {
        auto r = t->request->sink(chunk);
        if (!r) {
            t->sink_error = std::move(r).error();
            return 0;  // aborts with CURLE_WRITE_ERROR
        }
        return bytes;
    }
    const bool success = t->answer->status >= 200 && t->answer->status < 300;
    const std::size_t limit = success ? t->request->max_body_bytes : limits::kMaxRegistryErrorBodyBytes;
    if (t->answer->body.size() + bytes > limit) {
        if (success) {
            t->overflow = true;
        } else {
            t->answer->body.append(chunk.substr(0, limit - t->answer->body.size()));
            t->cut = true;
        }
        return 0;
    }
    t->answer->body.append(chunk);
    return bytes;
}

// Worth another try: the network or the peer failed, not our request.
// TLS handshake failures are not: they are nearly always configuration
// (a plain-http registry reached over https, an unknown CA).
bool transient(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

HttpOutcome failure(std::string message, bool is_transient)
{
    HttpOutcome out;
    out.error = internal_error(std::move(message));
    out.transient = is_transient;
    return out;
}

}  // namespace

std::optional<long> retry_after_ms(const HttpAnswer& answer)
{
    const auto it = answer.headers.find("retry-after");
    if (it == answer.headers.end() || it->second.empty())
        return std::nullopt;
    const std::string& value = it->second;
    if (value.find_first_not_of("0123456789") == std::string::npos) {
        if (value.size() > 9)
            return limits::kMaxRegistryBackoffMs;  // absurdly long; the caller caps it anyway
        return std::stol(value) * 1000;
    }
    const auto when = parse_http_date(value);
    if (!when)
        return std::nullopt;
    const std::int64_t now = ::time(nullptr);
    return *when <= now ? 0L : static_cast<long>(std::min<std::int64_t>(*when - now, 24 * 3600)) * 1000;
}

HttpOutcome http_get(const HttpSession& session, const HttpGet& request)
{
    if (auto init = net::curl::global_init(); !init)
        return failure(init.error().message, false);
    net::curl::Easy handle(sym_curl_easy_init());
    if (!handle)
        return failure("curl_easy_init failed", false);
    CURL* curl = handle.get();
    net::curl::Setter set(curl);

    HttpAnswer answer;
    Transfer transfer{.curl = curl, .request = &request, .answer = &answer};
    char error_buffer[CURL_ERROR_SIZE] = {};

    set(CURLOPT_URL, request.url.c_str());
    set(CURLOPT_HTTPGET, 1L);
    set(CURLOPT_PROTOCOLS_STR, "http,https");
    set(CURLOPT_FOLLOWLOCATION, 1L);
    set(CURLOPT_MAXREDIRS, limits::kMaxRegistryRedirects);
    // Never from https down to plain http, unless the registry itself is plain http.
    set(CURLOPT_REDIR_PROTOCOLS_STR, session.allow_plain_http ? "http,https" : "https");
    // Authorization is a custom header: libcurl sends it only to the host it
    // was meant for, never to the blob store a redirect leads to.
    set(CURLOPT_UNRESTRICTED_AUTH, 0L);
    set(CURLOPT_NOSIGNAL, 1L);
    set(CURLOPT_ERRORBUFFER, static_cast<char*>(error_buffer));
    set(CURLOPT_USERAGENT, "nps-runner");
    set(CURLOPT_WRITEFUNCTION, &on_body);
    set(CURLOPT_WRITEDATA, static_cast<void*>(&transfer));
    set(CURLOPT_HEADERFUNCTION, &on_header);
    set(CURLOPT_HEADERDATA, static_cast<void*>(&transfer));
    set(CURLOPT_CONNECTTIMEOUT_MS, limits::kRegistryConnectTimeoutMs);
    if (request.timeout_ms > 0)
        set(CURLOPT_TIMEOUT_MS, request.timeout_ms);
    set(CURLOPT_LOW_SPEED_LIMIT, 1024L);
    set(CURLOPT_LOW_SPEED_TIME, limits::kRegistryStallSeconds);
    set(CURLOPT_SSL_VERIFYPEER, 1L);
    set(CURLOPT_SSL_VERIFYHOST, 2L);
    curl_blob ca{};
    if (!session.ca_pem.empty()) {
        ca.data = const_cast<char*>(session.ca_pem.data());
        ca.len = session.ca_pem.size();
        ca.flags = CURL_BLOB_NOCOPY;
        set(CURLOPT_CAINFO_BLOB, &ca);
    }
    if (net::is_loopback_host(net::curl::url_host(request.url)))
        set(CURLOPT_PROXY, "");  // a registry on loopback is never behind the environment's proxy

    net::curl::Slist headers;
    for (const auto& line : request.headers)
        if (!net::curl::append(headers, line))
            return failure("out of memory building request headers", false);
    set(CURLOPT_HTTPHEADER, headers.get());
    if (set.error() != CURLE_OK)
        return failure(std::string("Failed to set up the request: ") + sym_curl_easy_strerror(set.error()), false);

    const CURLcode rc = sym_curl_easy_perform(curl);
    if (transfer.sink_error) {
        HttpOutcome out;
        out.error = std::move(*transfer.sink_error);
        return out;
    }
    if (transfer.overflow)
        return failure("the answer is larger than " + std::to_string(request.max_body_bytes) + " bytes", false);
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && transfer.cut)) {
        const std::string detail = error_buffer[0] != '\0' ? std::string(error_buffer) : sym_curl_easy_strerror(rc);
        HttpOutcome out = failure(detail, transient(rc));
        if (rc == CURLE_UNSUPPORTED_PROTOCOL)  // REDIR_PROTOCOLS refused a redirect
            out.error.message += " (a redirect to plain http is refused unless the registry is listed in "
                                 "images.insecure_registries)";
        if (rc == CURLE_SSL_CONNECT_ERROR)
            out.tls = HttpOutcome::Tls::handshake;
        else if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
            out.tls = HttpOutcome::Tls::certificate;
        return out;
    }
    sym_curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
    char* effective = nullptr;
    if (sym_curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK && effective)
        answer.url = effective;
    HttpOutcome out;
    out.answer = std::move(answer);
    return out;
}

}  // namespace nps::image::detail
