// SPDX-License-Identifier: Apache-2.0
// One hop on a libcurl easy handle (hop.hpp): the options every outbound
// request of guarded_fetch.hpp and async_fetch.hpp is made with, and how its
// end is read.
#include "hop.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "nps/base/limits.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/lazy/curl.hpp"
#include "nps/proto/destination_policy.hpp"

namespace nps::net::detail {

// Everything the curl callbacks of one hop touch.
struct Hop::State {
    std::string body;
    std::size_t max_body_bytes = 0;
    bool body_overflow = false;
    std::map<std::string, std::string> headers;
    const std::vector<proto::IpAddress>* allowed = nullptr;  // null: any address
    std::string refused_address;
    const std::atomic<bool>* cancel = nullptr;
    bool cancelled = false;
};

namespace {

using State = Hop::State;

// Curl calls this about once a second, and more often while data moves: a
// set cancel flag aborts the transfer (CURLE_ABORTED_BY_CALLBACK).
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t)
{
    auto* state = static_cast<State*>(user);
    if (state->cancel && state->cancel->load()) {
        state->cancelled = true;
        return 1;
    }
    return 0;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user)
{
    auto* state = static_cast<State*>(user);
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
    curl::collect_header(static_cast<State*>(user)->headers, std::string_view(data, bytes));
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
    auto* state = static_cast<State*>(user);
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

}  // namespace

Result<std::shared_ptr<const std::string>> ca_bundle(const std::optional<std::string>& ca_file)
{
    if (!ca_file || ca_file->empty())
        return std::shared_ptr<const std::string>();
    std::string bundle = NPS_TRY(curl::ca_bundle_with(*ca_file, limits::kMaxSpawnCaFileBytes, "the CA file"));
    return std::shared_ptr<const std::string>(std::make_shared<const std::string>(std::move(bundle)));
}

Hop::Hop(HopOptions options)
    : options_(std::move(options)), what_(options_.method + " '" + options_.url + "'"), state_(std::make_unique<State>())
{
}

Hop::~Hop() = default;

Result<std::unique_ptr<Hop>> Hop::prepare(HopOptions options)
{
    std::unique_ptr<Hop> hop(new Hop(std::move(options)));
    const HopOptions& o = hop->options_;
    const std::string& what = hop->what_;
    if (o.cancel && o.cancel->load())
        return internal_error(what + " cancelled");
    hop->handle_ = NPS_TRY(curl::new_easy(what));
    CURL* curl = hop->handle_.get();
    curl::Setter set(curl);

    State& state = *hop->state_;
    state.max_body_bytes = o.max_body_bytes;
    state.allowed = o.allowed ? &*o.allowed : nullptr;
    state.cancel = o.cancel;

    if (o.resolve_entry) {
        if (!curl::append(hop->resolve_, *o.resolve_entry))
            return internal_error(what + " failed: out of memory");
        set(CURLOPT_RESOLVE, hop->resolve_.get());
    }
    std::vector<std::string> header_lines = o.header_lines;
    if (o.body)
        header_lines.emplace_back("Expect:");  // no 100-continue round trip
    for (const std::string& line : header_lines)
        if (!curl::append(hop->headers_, line))
            return internal_error(what + " failed: out of memory");

    set(CURLOPT_URL, o.url.c_str());
    set(CURLOPT_PROTOCOLS_STR, o.protocols);
    set(CURLOPT_REDIR_PROTOCOLS_STR, o.protocols);
    set(CURLOPT_FOLLOWLOCATION, 0L);
    if (o.body) {
        set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(o.body->size()));
        set(CURLOPT_POSTFIELDS, o.body->c_str());  // owned by options_, which outlives the transfer
        if (o.method != "POST")
            set(CURLOPT_CUSTOMREQUEST, o.method.c_str());
    } else if (o.method == "GET") {
        set(CURLOPT_HTTPGET, 1L);
    } else {
        set(CURLOPT_CUSTOMREQUEST, o.method.c_str());
    }
    if (o.cancel) {
        set(CURLOPT_NOPROGRESS, 0L);
        set(CURLOPT_XFERINFOFUNCTION, &on_progress);
        set(CURLOPT_XFERINFODATA, static_cast<void*>(&state));
    }
    if (o.fresh_connection) {
        set(CURLOPT_FRESH_CONNECT, 1L);
        set(CURLOPT_FORBID_REUSE, 1L);
    }
    set(CURLOPT_NOSIGNAL, 1L);
    set(CURLOPT_PROXY, "");   // never through an environment proxy: it would bypass the pinning
    set(CURLOPT_NOPROXY, "*");
    set(CURLOPT_ERRORBUFFER, static_cast<char*>(hop->error_buffer_));
    set(CURLOPT_USERAGENT, "nps-runner/" NPS_RUNNER_VERSION);
    set(CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
    set(CURLOPT_SSL_VERIFYPEER, 1L);
    set(CURLOPT_SSL_VERIFYHOST, 2L);
    if (o.ca_bundle) {
        hop->ca_blob_ = curl_blob{const_cast<char*>(o.ca_bundle->data()), o.ca_bundle->size(), CURL_BLOB_NOCOPY};
        set(CURLOPT_CAINFO_BLOB, &hop->ca_blob_);
    }
    set(CURLOPT_TIMEOUT_MS, std::max(o.timeout_ms, 1L));
    set(CURLOPT_CONNECTTIMEOUT_MS, std::max(o.timeout_ms, 1L));
    set(CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(o.max_body_bytes));
    set(CURLOPT_WRITEFUNCTION, &on_body);
    set(CURLOPT_WRITEDATA, static_cast<void*>(&state));
    set(CURLOPT_HEADERFUNCTION, &on_header);
    set(CURLOPT_HEADERDATA, static_cast<void*>(&state));
    set(CURLOPT_OPENSOCKETFUNCTION, &open_socket);
    set(CURLOPT_OPENSOCKETDATA, static_cast<void*>(&state));
    if (hop->headers_)
        set(CURLOPT_HTTPHEADER, hop->headers_.get());
    if (set.error() != CURLE_OK)
        return internal_error(what + " failed: " + sym_curl_easy_strerror(set.error()));
    return hop;
}

Result<HopResult> Hop::finish(CURLcode rc)
{
    State& state = *state_;
    if (state.cancelled)
        return internal_error(what_ + " cancelled");
    if (state.body_overflow || rc == CURLE_FILESIZE_EXCEEDED)
        return internal_error(what_ + " failed: the body exceeds " + std::to_string(options_.max_body_bytes) + " bytes");
    if (!state.refused_address.empty())
        return internal_error(what_ + " failed: refused to connect to '" + state.refused_address +
                              "', which was not admitted");
    if (rc != CURLE_OK) {
        const std::string detail = error_buffer_[0] != '\0' ? std::string(error_buffer_) : sym_curl_easy_strerror(rc);
        return internal_error(what_ + " failed: " + detail);
    }
    HopResult result;
    sym_curl_easy_getinfo(handle_.get(), CURLINFO_RESPONSE_CODE, &result.status);
    char* redirect = nullptr;
    if (sym_curl_easy_getinfo(handle_.get(), CURLINFO_REDIRECT_URL, &redirect) == CURLE_OK && redirect != nullptr)
        result.redirect_url = std::string(redirect);
    result.headers = std::move(state.headers);
    result.body = std::move(state.body);
    return result;
}

Result<HopResult> perform_hop(HopOptions options)
{
    auto hop = NPS_TRY(Hop::prepare(std::move(options)));
    return hop->finish(sym_curl_easy_perform(hop->handle()));
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

std::string shown(std::string_view url)
{
    constexpr std::size_t kMax = 200;
    std::string out = "'";
    for (char c : url.substr(0, kMax))
        out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
    out += url.size() > kMax ? "'..." : "'";
    return out;
}

}  // namespace nps::net::detail
