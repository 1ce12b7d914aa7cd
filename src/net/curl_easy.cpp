// SPDX-License-Identifier: Apache-2.0
#include "nps/net/curl_easy.hpp"

#include <mutex>

#include "nps/base/ascii.hpp"
#include "nps/base/small_file.hpp"

namespace nps::net::curl {

namespace {

std::once_flag g_once;
CURLcode g_init_result = CURLE_OK;

struct UrlDeleter {
    void operator()(CURLU* url) const noexcept { sym_curl_url_cleanup(url); }
};

std::string_view trim(std::string_view text)
{
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' || text.back() == '\n'))
        text.remove_suffix(1);
    return text;
}

}  // namespace

Result<void> global_init()
{
    std::call_once(g_once, [] { g_init_result = sym_curl_global_init(CURL_GLOBAL_DEFAULT); });
    if (g_init_result != CURLE_OK)
        return internal_error(std::string("Failed to initialize libcurl: ") + sym_curl_easy_strerror(g_init_result));
    return {};
}

Result<Easy> new_easy(const std::string& what)
{
    if (auto init = global_init(); !init)
        return internal_error(what + " failed: " + init.error().message);
    Easy handle(sym_curl_easy_init());
    if (!handle)
        return internal_error(what + " failed: curl_easy_init failed");
    return handle;
}

bool append(Slist& list, const std::string& line)
{
    curl_slist* head = sym_curl_slist_append(list.get(), line.c_str());
    if (head == nullptr)
        return false;
    if (!list)  // appending to a non-empty list keeps its head
        list.reset(head);
    return true;
}

void collect_header(std::map<std::string, std::string>& headers, std::string_view line)
{
    if (line.substr(0, 5) == "HTTP/") {
        headers.clear();
        return;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos)
        return;  // the blank line ending the block, or a malformed line
    std::string name = ascii_lower(trim(line.substr(0, colon)));
    std::string value(trim(line.substr(colon + 1)));
    auto [it, inserted] = headers.try_emplace(std::move(name), value);
    if (!inserted)
        it->second += ", " + value;
}

std::string url_host(const std::string& url)
{
    std::unique_ptr<CURLU, UrlDeleter> parsed(sym_curl_url());
    if (!parsed || sym_curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK)
        return {};
    char* host = nullptr;
    if (sym_curl_url_get(parsed.get(), CURLUPART_HOST, &host, 0) != CURLUE_OK || host == nullptr)
        return {};
    std::string out(host);
    sym_curl_free(host);
    return out;
}

Result<std::string> ca_bundle_with(const std::string& ca_file, std::size_t max_bytes, const std::string& what)
{
    const std::string configured = NPS_TRY(read_small_file(ca_file, max_bytes, what));
    if (configured.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
        return internal_error("No PEM certificate in " + what + " '" + ca_file + "'");
    static const std::string system_path = default_ca_path();
    std::string bundle;
    if (!system_path.empty())
        if (auto system = read_small_file(system_path, max_bytes, "the system CA bundle"))
            bundle = std::move(*system);
    return bundle + "\n" + configured + "\n";
}

std::string default_ca_path()
{
    auto handle = new_easy("Finding the CA bundle");
    if (!handle)
        return {};
    char* found = nullptr;
    if (sym_curl_easy_getinfo(handle->get(), CURLINFO_CAINFO, &found) != CURLE_OK || found == nullptr)
        return {};
    return found;
}

}  // namespace nps::net::curl
