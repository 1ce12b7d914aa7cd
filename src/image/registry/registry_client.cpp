// SPDX-License-Identifier: Apache-2.0
// RegistryClient: requests, retries, authentication.
#include "registry_client.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>

#include "../format/json_document.hpp"
#include "nps/base/ascii.hpp"
#include "nps/base/digest.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/small_file.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/image/content_digest.hpp"
#include "nps/image/media_types.hpp"
#include "nps/image/registry_auth.hpp"
#include "nps/net/curl_easy.hpp"
#include "nps/net/http_client.hpp"  // url_encode

namespace nps::image::detail {

namespace {

// The trusted CAs: the system bundle and the configured one.
Result<std::string> ca_bundle(const std::string& ca_file)
{
    if (ca_file.empty())
        return std::string();
    return net::curl::ca_bundle_with(ca_file, limits::kMaxRegistryCaFileBytes, "images.ca_file");
}

std::string_view reason_phrase(long status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
    }
}

bool retryable_status(long status)
{
    return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

// "MANIFEST_UNKNOWN: manifest unknown" from the distribution spec's error body.
std::string registry_errors(const std::string& body)
{
    auto doc = parse_json_document(body, limits::kMaxRegistryErrorBodyBytes, "error body");
    if (!doc || !doc->contains("errors") || !(*doc)["errors"].is_array())
        return {};
    std::string out;
    std::size_t shown = 0;
    for (const auto& e : (*doc)["errors"]) {
        if (!e.is_object() || ++shown > 4)
            break;
        std::string one;
        if (e.contains("code") && e["code"].is_string())
            one = e["code"].get<std::string>();
        if (e.contains("message") && e["message"].is_string())
            one += (one.empty() ? "" : ": ") + e["message"].get<std::string>();
        if (!one.empty())
            out += (out.empty() ? "" : "; ") + one.substr(0, 300);
    }
    return out;
}

std::string content_type(const HttpAnswer& answer)
{
    const auto it = answer.headers.find("content-type");
    if (it == answer.headers.end())
        return {};
    std::string_view value = it->second;
    value = value.substr(0, value.find(';'));
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
        value.remove_suffix(1);
    return ascii_lower(value);
}

std::string seconds_text(long ms)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
    return buf;
}

// "host[:port]" of an http(s) URL, lowercased; empty when it is not one.
std::string url_authority(const std::string& url, bool* https)
{
    std::string_view rest = url;
    if (rest.rfind("https://", 0) == 0) {
        *https = true;
        rest.remove_prefix(8);
    } else if (rest.rfind("http://", 0) == 0) {
        *https = false;
        rest.remove_prefix(7);
    } else {
        return {};
    }
    return ascii_lower(rest.substr(0, rest.find_first_of("/?#")));
}

std::string tls_hint(HttpOutcome::Tls tls)
{
    switch (tls) {
    case HttpOutcome::Tls::handshake:
        return " (a registry that speaks plain http must be listed in images.insecure_registries)";
    case HttpOutcome::Tls::certificate:
        return " (a registry with a certificate from a private CA needs that CA in images.ca_file)";
    case HttpOutcome::Tls::ok:
        break;
    }
    return {};
}

}  // namespace

Result<RegistryClient> RegistryClient::open(const RegistryEndpoint& endpoint, const RegistrySettings& settings,
                                            NoticeFn notice)
{
    HttpSession session;
    session.ca_pem = NPS_TRY(ca_bundle(settings.ca_file));
    session.allow_plain_http = endpoint.plain_http;
    return RegistryClient(endpoint, settings, std::move(notice), std::move(session));
}

std::string RegistryClient::describe() const
{
    return "repository " + endpoint_.repository + " on registry " + endpoint_.registry;
}

Error RegistryClient::failure(const std::string& what, const std::string& detail) const
{
    return internal_error("Failed to fetch " + what + " of " + describe() + ": " + detail);
}

Error RegistryClient::http_failure(const std::string& what, const HttpAnswer& answer) const
{
    std::string detail = "HTTP " + std::to_string(answer.status);
    if (const auto phrase = reason_phrase(answer.status); !phrase.empty())
        detail += " " + std::string(phrase);
    if (const std::string errors = registry_errors(answer.body); !errors.empty())
        detail += " (" + errors + ")";
    if (answer.status == 401) {
        detail += configured() ? "; the registry refused the credentials configured for '" + endpoint_.registry + "'"
                             : "; the registry requires authentication and no credentials are configured for '" +
                                   endpoint_.registry + "' ([images.auth.\"" + endpoint_.registry + "\"])";
    } else if (answer.status == 403) {
        detail += "; access denied";
    }
    return failure(what, detail);
}

const RegistryCredentials* RegistryClient::configured() const
{
    for (const auto& [registry, c] : settings_.credentials)
        if (same_registry(registry, endpoint_.registry))
            return &c;
    return nullptr;
}

Result<std::optional<std::string>> RegistryClient::credentials()
{
    const RegistryCredentials* found = configured();
    if (!found)
        return std::optional<std::string>{};
    const RegistryCredentials& c = *found;
    std::string password = c.password;
    if (!c.password_file.empty()) {
        password = NPS_TRY(read_small_file(c.password_file, limits::kMaxRegistryPasswordFileBytes,
                                           "the password_file of registry " + endpoint_.registry));
        password = password.substr(0, password.find_first_of("\r\n"));
    }
    return std::optional<std::string>{c.username + ":" + password};
}

Result<HttpAnswer> RegistryClient::send(const Get& get)
{
    const int attempts = settings_.attempts > 0 ? settings_.attempts : limits::kRegistryAttempts;
    long backoff = settings_.first_backoff_ms >= 0 ? settings_.first_backoff_ms : limits::kRegistryFirstBackoffMs;
    int auth_rounds = 0;
    for (int attempt = 1;;) {
        if (get.restart)
            NPS_TRY_VOID(get.restart());
        HttpGet request{.url = get.url,
                        .headers = get.headers,
                        .max_body_bytes = get.max_body_bytes,
                        .timeout_ms = get.timeout_ms,
                        .sink = get.sink};
        if (get.authenticate && !authorization_.empty())
            request.headers.push_back("Authorization: " + authorization_);
        HttpOutcome outcome = http_get(session_, request);

        std::string why;
        long wait = backoff;
        if (!outcome.answer) {
            // The URL only here: the transport failed, so where it was going matters.
            const std::string detail = "GET " + get.url.substr(0, get.url.find('?')) + ": " + outcome.error.message;
            if (!outcome.transient)
                return failure(get.what, detail + tls_hint(outcome.tls));
            if (attempt >= attempts)
                return failure(get.what, detail + " (gave up after " + std::to_string(attempt) + " attempts)");
            why = outcome.error.message;
        } else {
            const long status = outcome.answer->status;
            // Authentication is not an attempt: a registry asks for it on first contact.
            if (status == 401 && get.authenticate && auth_rounds < 2) {
                const std::string before = authorization_;
                NPS_TRY_VOID(authenticate(*outcome.answer, get.what));
                ++auth_rounds;
                if (authorization_ != before || auth_rounds == 1)
                    continue;
            }
            if (!retryable_status(status))
                return std::move(*outcome.answer);
            if (attempt >= attempts) {
                Error e = http_failure(get.what, *outcome.answer);
                e.message += " (gave up after " + std::to_string(attempt) + " attempts)";
                return e;
            }
            why = "HTTP " + std::to_string(status);
            if (auto asked = retry_after_ms(*outcome.answer))
                wait = *asked;
        }
        wait = std::clamp<long>(wait, 0, limits::kMaxRegistryBackoffMs);
        if (notice_)
            notice_("Retrying " + get.what + " of " + describe() + " in " + seconds_text(wait) + " (attempt " +
                    std::to_string(attempt + 1) + " of " + std::to_string(attempts) + "): " + why);
        std::this_thread::sleep_for(std::chrono::milliseconds(wait));
        backoff = std::min(backoff * 2, limits::kMaxRegistryBackoffMs);
        ++attempt;
    }
}

Result<void> RegistryClient::authenticate(const HttpAnswer& unauthorized, const std::string& what)
{
    const auto header = unauthorized.headers.find("www-authenticate");
    if (header == unauthorized.headers.end())
        return failure(what, "HTTP 401 Unauthorized without a WWW-Authenticate challenge");
    auto challenges = parse_www_authenticate(header->second);
    if (!challenges)
        return failure(what, challenges.error().message);
    const AuthChallenge* bearer = nullptr;
    const AuthChallenge* basic = nullptr;
    for (const auto& c : *challenges) {
        if (c.scheme == "bearer" && !bearer)
            bearer = &c;
        else if (c.scheme == "basic" && !basic)
            basic = &c;
    }
    if (bearer)
        return fetch_token(bearer->params, what);
    if (basic) {
        auto creds = NPS_TRY(credentials());
        if (!creds)
            return failure(what, "the registry requires authentication (Basic) and no credentials are configured "
                                 "for '" + endpoint_.registry + "' ([images.auth.\"" + endpoint_.registry + "\"])");
        // Plain http reaches here only for a registry listed in insecure_registries.
        authorization_ = "Basic " + base64_encode(*creds);
        return {};
    }
    std::string schemes;
    for (const auto& c : *challenges)
        schemes += (schemes.empty() ? "" : ", ") + c.scheme;
    return failure(what, "the registry asks for an unsupported authentication scheme (" +
                             (schemes.empty() ? std::string("none") : schemes) + "); nps-runner supports Bearer and Basic");
}

Result<void> RegistryClient::fetch_token(const std::map<std::string, std::string>& params, const std::string& what)
{
    const auto realm_it = params.find("realm");
    if (realm_it == params.end() || realm_it->second.empty())
        return failure(what, "the registry's Bearer challenge has no realm");
    const std::string& realm = realm_it->second;
    bool https = false;
    const std::string authority = url_authority(realm, &https);
    if (authority.empty() || authority.find('@') != std::string::npos)
        return failure(what, "the token realm '" + realm.substr(0, 200) + "' is not an http(s) URL");
    // A token (and any credentials sent for it) must not cross the network in clear text.
    if (!https && !is_insecure_registry(settings_, authority))
        return failure(what, "refusing the token realm '" + realm.substr(0, 200) + "': plain http to '" + authority +
                                 "', which is not listed in images.insecure_registries");

    std::string url = realm + (realm.find('?') == std::string::npos ? "?" : "&");
    bool first = true;
    const auto add = [&](const char* key, const std::string& value) {
        url += (first ? "" : "&") + std::string(key) + "=" + net::url_encode(value);
        first = false;
    };
    if (auto s = params.find("service"); s != params.end())
        add("service", s->second);
    const auto scope = params.find("scope");
    add("scope", scope != params.end() ? scope->second : "repository:" + endpoint_.repository + ":pull");
    const RegistryCredentials* account = configured();
    if (account)
        add("account", account->username);  // what Docker sends; some token services want it

    Get get{.what = "a token from '" + realm.substr(0, 200) + "' for " + what,
            .url = url,
            .headers = {"Accept: application/json"},
            .max_body_bytes = limits::kMaxRegistryTokenResponseBytes,
            .timeout_ms = limits::kRegistryRequestTimeoutMs,
            .authenticate = false};
    const auto creds = NPS_TRY(credentials());
    if (creds) {
        get.headers.push_back("Authorization: Basic " + base64_encode(*creds));
    }
    const HttpAnswer answer = NPS_TRY(send(get));
    if (answer.status < 200 || answer.status >= 300) {
        Error e = http_failure(get.what, answer);
        if (answer.status == 401 || answer.status == 403)
            e.message = "Failed to fetch " + get.what + " of " + describe() + ": the token service answered HTTP " +
                        std::to_string(answer.status) +
                        (creds ? "; it refused the credentials configured for '" + endpoint_.registry + "'"
                               : "; it requires credentials and none are configured for '" + endpoint_.registry +
                                     "' ([images.auth.\"" + endpoint_.registry + "\"])");
        return e;
    }
    const std::string token = NPS_TRY(parse_token_response(answer.body, "'" + realm.substr(0, 200) + "'"));
    authorization_ = "Bearer " + token;
    return {};
}

Result<FetchedManifest> RegistryClient::manifest(const std::string& reference, std::size_t max_bytes)
{
    const std::string what = "manifest '" + reference + "'";
    Get get{.what = what,
            .url = endpoint_.base_url + "/v2/" + endpoint_.repository + "/manifests/" + reference,
            .headers = {"Accept: " + std::string(media_type::kOciManifest) + ", " + std::string(media_type::kOciIndex) +
                        ", " + std::string(media_type::kDockerManifest) + ", " +
                        std::string(media_type::kDockerManifestList)},
            .max_body_bytes = max_bytes,
            .timeout_ms = limits::kRegistryRequestTimeoutMs};
    const HttpAnswer answer = NPS_TRY(send(get));
    if (answer.status != 200)
        return http_failure(what, answer);
    FetchedManifest out;
    out.bytes = answer.body;
    out.media_type = content_type(answer);
    out.digest = digest_of(out.bytes);
    if (is_sha256_digest(reference) && out.digest != reference)
        return failure(what, "the registry's answer hashes to " + out.digest + ", not to the digest asked for");
    if (const auto dcd = answer.headers.find("docker-content-digest");
        dcd != answer.headers.end() && is_sha256_digest(dcd->second) && dcd->second != out.digest)
        return failure(what, "the registry says its answer is " + dcd->second + " (Docker-Content-Digest) but it hashes to " +
                                 out.digest);
    if (out.media_type.rfind("application/vnd.docker.distribution.manifest.v1+", 0) == 0)
        return failure(what, "Docker schema 1 manifests (" + out.media_type +
                                 ") are not supported; push the image again with a current tool");
    return out;
}

Result<std::string> RegistryClient::small_blob(const std::string& digest, std::int64_t size, std::size_t max_bytes)
{
    const std::string what = "blob " + digest;
    if (size < 0 || static_cast<std::uint64_t>(size) > max_bytes)
        return failure(what, "its descriptor declares " + std::to_string(size) + " bytes, more than the limit of " +
                                 std::to_string(max_bytes));
    Get get{.what = what,
            .url = endpoint_.base_url + "/v2/" + endpoint_.repository + "/blobs/" + digest,
            .max_body_bytes = max_bytes,
            .timeout_ms = limits::kRegistryRequestTimeoutMs};
    const HttpAnswer answer = NPS_TRY(send(get));
    if (answer.status != 200)
        return http_failure(what, answer);
    if (static_cast<std::int64_t>(answer.body.size()) != size)
        return failure(what, "it has " + std::to_string(answer.body.size()) + " bytes, its descriptor declares " +
                                 std::to_string(size));
    if (const std::string actual = digest_of(answer.body); actual != digest)
        return failure(what, "its content hashes to " + actual);
    return answer.body;
}

Result<void> RegistryClient::blob(const std::string& digest, const std::function<Result<void>()>& restart,
                                  const BodySink& sink)
{
    const std::string what = "blob " + digest;
    Get get{.what = what,
            .url = endpoint_.base_url + "/v2/" + endpoint_.repository + "/blobs/" + digest,
            .restart = restart,
            .sink = sink};
    const HttpAnswer answer = NPS_TRY(send(get));
    if (answer.status != 200)
        return http_failure(what, answer);
    return {};
}

}  // namespace nps::image::detail
