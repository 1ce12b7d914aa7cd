// SPDX-License-Identifier: Apache-2.0
// http_request on the libcurl easy interface: one handle per request.
#include "nps/net/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "nps/net/http_server.hpp"  // is_loopback_host

namespace nps::net {

namespace {

std::once_flag g_curl_once;
CURLcode g_curl_init_result = CURLE_OK;

Result<void> ensure_curl_initialized()
{
    std::call_once(g_curl_once, [] { g_curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT); });
    if (g_curl_init_result != CURLE_OK)
        return internal_error(std::string("Failed to initialize libcurl: ") + curl_easy_strerror(g_curl_init_result));
    return {};
}

struct EasyDeleter {
    void operator()(CURL* handle) const noexcept { curl_easy_cleanup(handle); }
};
struct SlistDeleter {
    void operator()(curl_slist* list) const noexcept { curl_slist_free_all(list); }
};
struct UrlDeleter {
    void operator()(CURLU* url) const noexcept { curl_url_cleanup(url); }
};

struct BodySink {
    std::string* body = nullptr;
    std::size_t max_bytes = 0;
    bool overflow = false;
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user)
{
    auto* sink = static_cast<BodySink*>(user);
    const std::size_t bytes = size * count;
    if (sink->body->size() + bytes > sink->max_bytes) {
        sink->overflow = true;
        return 0;  // aborts the transfer with CURLE_WRITE_ERROR
    }
    sink->body->append(data, bytes);
    return bytes;
}

std::string lower(std::string_view text)
{
    std::string out(text);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string_view trim(std::string_view text)
{
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' || text.back() == '\n'))
        text.remove_suffix(1);
    return text;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user)
{
    auto* headers = static_cast<std::map<std::string, std::string>*>(user);
    const std::size_t bytes = size * count;
    const std::string_view line(data, bytes);
    if (line.substr(0, 5) == "HTTP/") {
        headers->clear();  // a new response (after "100 Continue"): keep only the final one's headers
        return bytes;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos)
        return bytes;  // the blank line ending the block, or a malformed line
    std::string name = lower(trim(line.substr(0, colon)));
    std::string value(trim(line.substr(colon + 1)));
    auto [it, inserted] = headers->try_emplace(std::move(name), value);
    if (!inserted)
        it->second += ", " + value;
    return bytes;
}

bool has_header(const ClientRequest& request, std::string_view lowercase_name)
{
    return std::any_of(request.headers.begin(), request.headers.end(),
                       [&](const auto& header) { return lower(header.first) == lowercase_name; });
}

// The URL's host, or empty if curl cannot parse the URL (perform then reports it).
std::string url_host(const std::string& url)
{
    std::unique_ptr<CURLU, UrlDeleter> parsed(curl_url());
    if (!parsed || curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK)
        return {};
    char* host = nullptr;
    if (curl_url_get(parsed.get(), CURLUPART_HOST, &host, 0) != CURLUE_OK || host == nullptr)
        return {};
    std::string out(host);
    curl_free(host);
    return out;
}

}  // namespace

Result<ClientResponse> http_request(const ClientRequest& request)
{
    NPS_TRY_VOID(ensure_curl_initialized());

    std::string what = "HTTP " + request.method + " '" + request.url + "'";
    if (request.unix_socket)
        what += " via unix socket '" + *request.unix_socket + "'";

    std::unique_ptr<CURL, EasyDeleter> handle(curl_easy_init());
    if (!handle)
        return internal_error(what + " failed: curl_easy_init failed");
    CURL* curl = handle.get();

    CURLcode setopt_error = CURLE_OK;
    auto set = [&](CURLoption option, auto value) {
        const CURLcode rc = curl_easy_setopt(curl, option, value);
        if (rc != CURLE_OK && setopt_error == CURLE_OK)
            setopt_error = rc;
    };

    ClientResponse response;
    BodySink sink{&response.body, request.max_response_bytes, false};
    char error_buffer[CURL_ERROR_SIZE] = {};

    set(CURLOPT_URL, request.url.c_str());
    set(CURLOPT_PROTOCOLS_STR, "http,https");
    set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    set(CURLOPT_NOSIGNAL, 1L);
    set(CURLOPT_ERRORBUFFER, static_cast<char*>(error_buffer));
    set(CURLOPT_USERAGENT, "nps-runner");
    set(CURLOPT_WRITEFUNCTION, &on_body);
    set(CURLOPT_WRITEDATA, static_cast<void*>(&sink));
    set(CURLOPT_HEADERFUNCTION, &on_header);
    set(CURLOPT_HEADERDATA, static_cast<void*>(&response.headers));
    if (request.timeout_ms > 0) {
        set(CURLOPT_TIMEOUT_MS, request.timeout_ms);
        set(CURLOPT_CONNECTTIMEOUT_MS, request.timeout_ms);
    }
    if (request.unix_socket) {
        set(CURLOPT_UNIX_SOCKET_PATH, request.unix_socket->c_str());
        set(CURLOPT_PROXY, "");  // never send daemon traffic through an environment proxy
    } else if (is_loopback_host(url_host(request.url))) {
        set(CURLOPT_PROXY, "");
    }

    // Method and body. A POST/PUT/PATCH without a body still sends Content-Length: 0.
    const std::string& method = request.method;
    const bool sends_body = request.body.has_value() || method == "POST" || method == "PUT" || method == "PATCH";
    static const std::string kEmpty;
    const std::string& body = request.body ? *request.body : kEmpty;
    if (method == "HEAD") {
        set(CURLOPT_NOBODY, 1L);
    } else if (sends_body) {
        set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
        set(CURLOPT_POSTFIELDS, body.c_str());
        if (method != "POST")
            set(CURLOPT_CUSTOMREQUEST, method.c_str());
    } else if (method == "GET") {
        set(CURLOPT_HTTPGET, 1L);
    } else {
        set(CURLOPT_CUSTOMREQUEST, method.c_str());
    }

    std::unique_ptr<curl_slist, SlistDeleter> headers;
    auto add_header = [&](const std::string& line) -> bool {
        curl_slist* list = curl_slist_append(headers.get(), line.c_str());
        if (list == nullptr)
            return false;
        if (!headers)  // appending to a non-empty list keeps its head
            headers.reset(list);
        return true;
    };
    bool headers_ok = true;
    for (const auto& [name, value] : request.headers)
        headers_ok &= add_header(value.empty() ? name + ";" : name + ": " + value);  // "Name;" sends an empty value
    if (sends_body && !has_header(request, "content-type"))
        headers_ok &= add_header("Content-Type: application/json");
    if (!has_header(request, "expect"))
        headers_ok &= add_header("Expect:");  // no 100-continue round trip
    if (!headers_ok)
        return internal_error(what + " failed: out of memory building headers");
    set(CURLOPT_HTTPHEADER, headers.get());

    if (setopt_error != CURLE_OK)
        return internal_error(what + " failed: " + curl_easy_strerror(setopt_error));

    const CURLcode rc = curl_easy_perform(curl);
    if (sink.overflow)
        return internal_error(what + " failed: response body exceeds " + std::to_string(request.max_response_bytes) +
                              " bytes");
    if (rc != CURLE_OK) {
        const std::string detail = error_buffer[0] != '\0' ? std::string(error_buffer) : curl_easy_strerror(rc);
        return internal_error(what + " failed: " + detail);
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    return response;
}

std::string url_encode(const std::string& text)
{
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~') {
            out.push_back(c);
        } else {
            out.push_back('%');
            out.push_back(kHex[u >> 4]);
            out.push_back(kHex[u & 0x0F]);
        }
    }
    return out;
}

}  // namespace nps::net
