// SPDX-License-Identifier: Apache-2.0
// guarded_request / trusted_request (and their GET forms) on the libcurl easy
// interface: one handle per hop, so nothing (connections, DNS cache, pinned
// addresses) outlives a hop.
#include "nps/net/guarded_fetch.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "nps/base/limits.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/net/curl_easy.hpp"
#include "nps/proto/destination_policy.hpp"

namespace nps::net {

namespace {

using Clock = std::chrono::steady_clock;

// Everything the curl callbacks of one hop touch.
struct HopState {
    std::string body;
    std::size_t max_body_bytes = 0;
    bool body_overflow = false;
    std::map<std::string, std::string> headers;
    const std::vector<proto::IpAddress>* allowed = nullptr;  // null: any address (trusted_get)
    std::string refused_address;
    const std::atomic<bool>* cancel = nullptr;
    bool cancelled = false;
};

// Curl calls this about once a second, and more often while data moves: a
// set cancel flag aborts the transfer (CURLE_ABORTED_BY_CALLBACK).
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t)
{
    auto* state = static_cast<HopState*>(user);
    if (state->cancel && state->cancel->load()) {
        state->cancelled = true;
        return 1;
    }
    return 0;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user)
{
    auto* state = static_cast<HopState*>(user);
    const std::size_t bytes = size * count;
    if (state->body.size() + bytes > state->max_body_bytes) {
        state->body_overflow = true;
        return 0;  // aborts the transfer with CURLE_WRITE_ERROR
    }
    state->body.append(data, bytes);
    return bytes;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user)
{
    const std::size_t bytes = size * count;
    curl::collect_header(static_cast<HopState*>(user)->headers, std::string_view(data, bytes));
    return bytes;
}

std::optional<proto::IpAddress> socket_address(const curl_sockaddr* address)
{
    proto::IpAddress out;
    if (address->family == AF_INET && address->addrlen >= sizeof(sockaddr_in)) {
        sockaddr_in sin{};
        std::memcpy(&sin, &address->addr, sizeof sin);
        std::memcpy(out.bytes.data(), &sin.sin_addr, 4);
        return out;
    }
    if (address->family == AF_INET6 && address->addrlen >= sizeof(sockaddr_in6)) {
        sockaddr_in6 sin6{};
        std::memcpy(&sin6, &address->addr, sizeof sin6);
        out.is_v6 = true;
        std::memcpy(out.bytes.data(), &sin6.sin6_addr, 16);
        return out;
    }
    return std::nullopt;
}

// Curl asks us for every socket it connects: only admitted addresses get one.
curl_socket_t open_socket(void* user, curlsocktype purpose, curl_sockaddr* address)
{
    auto* state = static_cast<HopState*>(user);
    if (purpose != CURLSOCKTYPE_IPCXN)
        return CURL_SOCKET_BAD;
    if (state->allowed) {
        const auto ip = socket_address(address);
        const bool ok = ip && std::any_of(state->allowed->begin(), state->allowed->end(), [&](const auto& a) {
            return a.is_v6 == ip->is_v6 && a.bytes == ip->bytes;
        });
        if (!ok) {
            state->refused_address = ip ? proto::format_ip(*ip) : "(unknown family)";
            return CURL_SOCKET_BAD;
        }
    }
    return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

Result<std::string> read_small_file(const std::string& path, const std::string& what)
{
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
        return system_error_errno("Failed to read " + what + " '" + path + "'");
    std::string data(limits::kMaxSpawnCaFileBytes + 1, '\0');
    std::size_t filled = 0;
    while (filled < data.size()) {
        const ssize_t n = ::read(fd.get(), data.data() + filled, data.size() - filled);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return system_error_errno("Failed to read " + what + " '" + path + "'");
        if (n == 0)
            break;
        filled += static_cast<std::size_t>(n);
    }
    if (filled > limits::kMaxSpawnCaFileBytes)
        return internal_error(what + " '" + path + "' is larger than " + std::to_string(limits::kMaxSpawnCaFileBytes) +
                              " bytes");
    data.resize(filled);
    return data;
}

// Where this libcurl finds the system CA bundle, or "".
std::string system_ca_path()
{
    static const std::string path = curl::default_ca_path();
    return path;
}

// The trusted CAs for a configured ca_file: the system bundle plus that file
// (an addition, as images.ca_file is; CURLOPT_CAINFO alone would replace the
// system store). nullopt without a ca_file: curl's defaults.
Result<std::optional<std::string>> ca_bundle(const std::optional<std::string>& ca_file)
{
    if (!ca_file || ca_file->empty())
        return std::optional<std::string>{};
    const std::string configured = NPS_TRY(read_small_file(*ca_file, "the CA file"));
    if (configured.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
        return internal_error("The CA file '" + *ca_file + "' holds no PEM certificate");
    std::string bundle;
    if (const std::string path = system_ca_path(); !path.empty())
        if (auto system = read_small_file(path, "the system CA bundle"))
            bundle = std::move(*system);
    bundle += "\n" + configured + "\n";
    return std::optional<std::string>{std::move(bundle)};
}

struct HopOptions {
    std::string method = "GET";
    const std::optional<std::string>* body = nullptr;  // null or empty optional: no body
    const std::atomic<bool>* cancel = nullptr;
    std::string url;
    const char* protocols = "https";
    std::optional<std::string> resolve_entry;              // "host:port:addr,addr"
    const std::vector<proto::IpAddress>* allowed = nullptr;
    const std::optional<std::string>* ca_bundle = nullptr;  // PEM text; null or empty: curl's defaults
    long timeout_ms = 0;
    std::size_t max_body_bytes = 0;
    std::vector<std::string> header_lines;
};

struct HopResult {
    long status = 0;
    std::map<std::string, std::string> headers;
    std::string body;
    std::optional<std::string> redirect_url;
};

Result<HopResult> perform_hop(const HopOptions& options)
{
    const std::string what = options.method + " '" + options.url + "'";
    const curl::Easy handle = NPS_TRY(curl::new_easy(what));
    CURL* curl = handle.get();
    curl::Setter set(curl);

    HopState state;
    state.max_body_bytes = options.max_body_bytes;
    state.allowed = options.allowed;
    state.cancel = options.cancel;
    char error_buffer[CURL_ERROR_SIZE] = {};
    if (options.cancel && options.cancel->load())
        return internal_error(what + " cancelled");

    curl::Slist resolve;
    if (options.resolve_entry) {
        if (!curl::append(resolve, *options.resolve_entry))
            return internal_error(what + " failed: out of memory");
        set(CURLOPT_RESOLVE, resolve.get());
    }
    const bool has_body = options.body && options.body->has_value();
    std::vector<std::string> header_lines = options.header_lines;
    if (has_body)
        header_lines.emplace_back("Expect:");  // no 100-continue round trip
    curl::Slist headers;
    for (const std::string& line : header_lines)
        if (!curl::append(headers, line))
            return internal_error(what + " failed: out of memory");

    set(CURLOPT_URL, options.url.c_str());
    set(CURLOPT_PROTOCOLS_STR, options.protocols);
    set(CURLOPT_REDIR_PROTOCOLS_STR, options.protocols);
    set(CURLOPT_FOLLOWLOCATION, 0L);
    if (has_body) {
        const std::string& body = **options.body;
        set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
        set(CURLOPT_POSTFIELDS, body.c_str());
        if (options.method != "POST")
            set(CURLOPT_CUSTOMREQUEST, options.method.c_str());
    } else if (options.method == "GET") {
        set(CURLOPT_HTTPGET, 1L);
    } else {
        set(CURLOPT_CUSTOMREQUEST, options.method.c_str());
    }
    if (options.cancel) {
        set(CURLOPT_NOPROGRESS, 0L);
        set(CURLOPT_XFERINFOFUNCTION, &on_progress);
        set(CURLOPT_XFERINFODATA, static_cast<void*>(&state));
    }
    set(CURLOPT_NOSIGNAL, 1L);
    set(CURLOPT_PROXY, "");   // never through an environment proxy: it would bypass the pinning
    set(CURLOPT_NOPROXY, "*");
    set(CURLOPT_ERRORBUFFER, static_cast<char*>(error_buffer));
    set(CURLOPT_USERAGENT, "nps-runner/" NPS_RUNNER_VERSION);
    set(CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
    set(CURLOPT_SSL_VERIFYPEER, 1L);
    set(CURLOPT_SSL_VERIFYHOST, 2L);
    curl_blob ca_blob{};
    if (options.ca_bundle && *options.ca_bundle) {
        ca_blob = curl_blob{const_cast<char*>((*options.ca_bundle)->data()), (*options.ca_bundle)->size(),
                            CURL_BLOB_NOCOPY};
        set(CURLOPT_CAINFO_BLOB, &ca_blob);
    }
    set(CURLOPT_TIMEOUT_MS, std::max(options.timeout_ms, 1L));
    set(CURLOPT_CONNECTTIMEOUT_MS, std::max(options.timeout_ms, 1L));
    set(CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options.max_body_bytes));
    set(CURLOPT_WRITEFUNCTION, &on_body);
    set(CURLOPT_WRITEDATA, static_cast<void*>(&state));
    set(CURLOPT_HEADERFUNCTION, &on_header);
    set(CURLOPT_HEADERDATA, static_cast<void*>(&state));
    set(CURLOPT_OPENSOCKETFUNCTION, &open_socket);
    set(CURLOPT_OPENSOCKETDATA, static_cast<void*>(&state));
    if (headers)
        set(CURLOPT_HTTPHEADER, headers.get());
    if (set.error() != CURLE_OK)
        return internal_error(what + " failed: " + curl_easy_strerror(set.error()));

    const CURLcode rc = curl_easy_perform(curl);
    if (state.cancelled)
        return internal_error(what + " cancelled");
    if (state.body_overflow || rc == CURLE_FILESIZE_EXCEEDED)
        return internal_error(what + " failed: the body exceeds " + std::to_string(options.max_body_bytes) + " bytes");
    if (!state.refused_address.empty())
        return internal_error(what + " failed: refused to connect to '" + state.refused_address +
                              "', which was not admitted");
    if (rc != CURLE_OK) {
        const std::string detail = error_buffer[0] != '\0' ? std::string(error_buffer) : curl_easy_strerror(rc);
        return internal_error(what + " failed: " + detail);
    }
    HopResult result;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
    char* redirect = nullptr;
    if (curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &redirect) == CURLE_OK && redirect != nullptr)
        result.redirect_url = std::string(redirect);
    result.headers = std::move(state.headers);
    result.body = std::move(state.body);
    return result;
}

bool is_redirect(long status)
{
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

std::string resolve_entry(const AdmittedDestination& admitted)
{
    std::string entry = admitted.destination.host + ":" + std::to_string(admitted.destination.port) + ":";
    for (std::size_t i = 0; i < admitted.addresses.size(); ++i) {
        const auto& a = admitted.addresses[i];
        if (i > 0)
            entry += ",";
        entry += a.is_v6 ? "[" + proto::format_ip(a) + "]" : proto::format_ip(a);
    }
    return entry;
}

// A URL from a server, for a message: quoted, bounded.
std::string shown(std::string_view url)
{
    constexpr std::size_t kMax = 200;
    std::string out = "'";
    for (char c : url.substr(0, kMax))
        out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
    out += url.size() > kMax ? "'..." : "'";
    return out;
}

long remaining_ms(Clock::time_point deadline)
{
    return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
}

// The validators of a conditional GET (guarded_get's revalidation).
struct Validators {
    const std::string& url;
    const std::optional<std::string>& if_none_match;
    const std::optional<std::string>& if_modified_since;
};

bool follows(RedirectRule rule, long status)
{
    switch (rule) {
    case RedirectRule::all:
        return is_redirect(status);
    case RedirectRule::method_preserving:
        return status == 307 || status == 308;
    case RedirectRule::none:
        return false;
    }
    return false;
}

// Hops until an answer the rule does not follow; any status is a response.
Result<FetchedResponse> run_guarded(const GuardedRequest& request, const Validators* validators)
{
    if (request.guard == nullptr)
        return internal_error("guarded request: no destination guard");
    const auto deadline = Clock::now() + std::chrono::milliseconds(request.limits.timeout_ms);
    FetchedResponse response;
    std::string url = request.url;
    auto fail = [&](const std::string& problem) { return internal_error(request.what + ": " + problem); };
    auto bundle = ca_bundle(request.ca_file);
    if (!bundle)
        return fail(bundle.error().describe());
    for (unsigned hop = 0;; ++hop) {
        // A redirect target is a new destination and is checked as one.
        const std::string what = hop == 0 ? request.what : request.what + ": redirect to " + shown(url);
        long left = remaining_ms(deadline);
        if (left <= 0)
            return fail("no answer within " + std::to_string(request.limits.timeout_ms) + " ms");
        const AdmittedDestination admitted = NPS_TRY(request.guard->admit(url, what, static_cast<int>(left)));

        HopOptions options;
        // RedirectRule::all follows with a GET (no body), as browsers and curl do for 301/302/303.
        const bool resend = hop == 0 || request.redirects == RedirectRule::method_preserving;
        options.method = resend ? request.method : "GET";
        options.body = resend ? &request.body : nullptr;
        options.cancel = request.cancel;
        options.url = url;
        options.allowed = &admitted.addresses;
        if (!admitted.destination.literal)
            options.resolve_entry = resolve_entry(admitted);
        options.ca_bundle = &*bundle;
        options.max_body_bytes = request.limits.max_body_bytes;
        for (const auto& [name, value] : request.headers)
            options.header_lines.push_back(name + ": " + value);
        const bool revalidating = validators && url == validators->url;
        if (revalidating && validators->if_none_match)
            options.header_lines.push_back("If-None-Match: " + *validators->if_none_match);
        if (revalidating && validators->if_modified_since)
            options.header_lines.push_back("If-Modified-Since: " + *validators->if_modified_since);
        left = remaining_ms(deadline);
        if (left <= 0)
            return fail("no answer within " + std::to_string(request.limits.timeout_ms) + " ms");
        options.timeout_ms = left;

        auto performed = perform_hop(options);
        if (!performed)
            return fail(performed.error().describe());
        HopResult& result = *performed;
        const std::string answered = hop == 0 ? std::string("the server") : shown(url);
        if (follows(request.redirects, result.status)) {
            if (!result.redirect_url)
                return fail(answered + " answered HTTP " + std::to_string(result.status) + " without a Location");
            if (hop >= request.limits.max_redirects)
                return fail("more than " + std::to_string(request.limits.max_redirects) + " redirects");
            url = *result.redirect_url;
            response.redirects.push_back(url);
            continue;
        }
        response.status = result.status;
        response.headers = std::move(result.headers);
        response.body = std::move(result.body);
        response.final_url = url;
        return response;
    }
}

}  // namespace

Result<FetchedResponse> guarded_get(const GuardedGetRequest& request)
{
    const GuardedRequest generic{.url = request.url,
                                 .what = request.what,
                                 .guard = request.guard,
                                 .ca_file = request.ca_file,
                                 .limits = request.limits,
                                 .redirects = RedirectRule::all,
                                 .headers = request.headers};
    const Validators validators{request.validators_url, request.if_none_match, request.if_modified_since};
    FetchedResponse response =
        NPS_TRY(run_guarded(generic, request.validators_url.empty() ? nullptr : &validators));
    const bool revalidated = response.status == 304 && !request.validators_url.empty() &&
                             response.final_url == request.validators_url;
    if (!revalidated && (response.status < 200 || response.status > 299)) {
        const std::string answered = response.redirects.empty() ? std::string("the server") : shown(response.final_url);
        return internal_error(request.what + ": " + answered + " answered HTTP " + std::to_string(response.status));
    }
    return response;
}

Result<FetchedResponse> guarded_request(const GuardedRequest& request)
{
    return run_guarded(request, nullptr);
}

Result<FetchedResponse> trusted_get(const TrustedGetRequest& request)
{
    return trusted_request({.url = request.url,
                            .ca_file = request.ca_file,
                            .timeout_ms = request.timeout_ms,
                            .max_body_bytes = request.max_body_bytes,
                            .headers = {{"Accept", "application/json"}}});
}

Result<FetchedResponse> trusted_request(const TrustedRequest& request)
{
    const std::optional<std::string> bundle = NPS_TRY(ca_bundle(request.ca_file));
    HopOptions options;
    options.method = request.method;
    options.body = &request.body;
    options.cancel = request.cancel;
    options.url = request.url;
    options.protocols = "http,https";
    options.ca_bundle = &bundle;
    options.timeout_ms = request.timeout_ms;
    options.max_body_bytes = request.max_body_bytes;
    for (const auto& [name, value] : request.headers)
        options.header_lines.push_back(name + ": " + value);
    HopResult result = NPS_TRY(perform_hop(options));
    FetchedResponse response;
    response.status = result.status;
    response.headers = std::move(result.headers);
    response.body = std::move(result.body);
    response.final_url = request.url;
    return response;
}

}  // namespace nps::net
