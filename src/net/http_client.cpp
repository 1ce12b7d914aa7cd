// SPDX-License-Identifier: Apache-2.0
// http_request on the libcurl easy interface: one handle per request.
#include "nps/net/http_client.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "nps/base/ascii.hpp"
#include "nps/lazy/curl.hpp"
#include "nps/net/curl_easy.hpp"
#include "nps/net/http_server.hpp"  // is_loopback_host

namespace nps::net {

namespace {

struct BodySink {
    std::string* body = nullptr;
    std::size_t max_bytes = 0;
    bool overflow = false;
    CURL* curl = nullptr;
    const std::function<bool(std::string_view)>* on_data = nullptr;
    bool stopped = false;  // on_data asked to end the transfer
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user)
{
    auto* sink = static_cast<BodySink*>(user);
    const std::size_t bytes = size * count;
    if (sink->on_data != nullptr && *sink->on_data) {
        long status = 0;
        sym_curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 200 && status < 300) {
            if ((*sink->on_data)(std::string_view(data, bytes)))
                return bytes;
            sink->stopped = true;
            return 0;  // aborts the transfer (CURLE_WRITE_ERROR), reported as a response
        }
    }
    if (sink->body->size() + bytes > sink->max_bytes) {
        sink->overflow = true;
        return 0;  // aborts the transfer with CURLE_WRITE_ERROR
    }
    sink->body->append(data, bytes);
    return bytes;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user)
{
    const std::size_t bytes = size * count;
    curl::collect_header(*static_cast<std::map<std::string, std::string>*>(user), std::string_view(data, bytes));
    return bytes;
}

bool has_header(const ClientRequest& request, std::string_view lowercase_name)
{
    return std::any_of(request.headers.begin(), request.headers.end(),
                       [&](const auto& header) { return ascii_lower(header.first) == lowercase_name; });
}

// libcurl calls this at least once a second; non-zero aborts the transfer.
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t)
{
    return static_cast<const std::atomic<bool>*>(user)->load() ? 1 : 0;
}

}  // namespace

Result<ClientResponse> http_request(const ClientRequest& request)
{
    std::string what = "HTTP " + request.method + " '" + request.url + "'";
    if (request.unix_socket)
        what += " via unix socket '" + *request.unix_socket + "'";

    const curl::Easy handle = NPS_TRY(curl::new_easy(what));
    CURL* curl = handle.get();
    curl::Setter set(curl);

    ClientResponse response;
    BodySink sink{&response.body, request.max_response_bytes, false, curl, &request.on_data};
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
    if (request.cancel != nullptr) {
        set(CURLOPT_XFERINFOFUNCTION, &on_progress);
        set(CURLOPT_XFERINFODATA, const_cast<void*>(static_cast<const void*>(request.cancel)));
        set(CURLOPT_NOPROGRESS, 0L);
    }
    if (request.unix_socket) {
        set(CURLOPT_UNIX_SOCKET_PATH, request.unix_socket->c_str());
        set(CURLOPT_PROXY, "");  // never send daemon traffic through an environment proxy
    } else if (is_loopback_host(curl::url_host(request.url))) {
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

    curl::Slist headers;
    auto add_header = [&](const std::string& line) { return curl::append(headers, line); };
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

    if (set.error() != CURLE_OK)
        return internal_error(what + " failed: " + sym_curl_easy_strerror(set.error()));

    const CURLcode rc = sym_curl_easy_perform(curl);
    if (sink.overflow)
        return internal_error(what + " failed: response body exceeds " + std::to_string(request.max_response_bytes) +
                              " bytes");
    if (rc != CURLE_OK && !sink.stopped) {
        const std::string detail = error_buffer[0] != '\0' ? std::string(error_buffer) : sym_curl_easy_strerror(rc);
        return internal_error(what + " failed: " + detail);
    }
    sym_curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
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
