// SPDX-License-Identifier: Apache-2.0
#include "nps/config/config.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "nps/base/limits.hpp"
#include "nps/proto/destination_policy.hpp"
#include "nps/proto/ed25519.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/task_frame.hpp"
#include "nps/proto/url.hpp"
#include "sections.hpp"

namespace nps::config {

using detail::has_control;
using detail::TableReader;

namespace {

// The first line of a token file; `key` names the setting in messages.
Result<std::string> read_token_file(const std::string& path, const std::string& key, std::size_t min_chars)
{
    std::ifstream in(path);
    if (!in)
        return system_error_errno("Failed to read " + key + " '" + path + "'");
    std::string token;
    std::getline(in, token);
    while (!token.empty() && (token.back() == '\r' || token.back() == ' '))
        token.pop_back();
    if (token.size() < min_chars)
        return internal_error(key + " '" + path + "' holds a token shorter than " + std::to_string(min_chars) +
                              " characters");
    return token;
}

Result<void> apply_runner(const TableReader& t, Config& c)
{
    NPS_TRY_VOID(t.check_keys({"state_dir", "nid", "inboxes", "lease_seconds", "claim_interval_ms", "max_tasks",
                               "execution", "shutdown_grace_seconds", "log_format"}));
    if (auto v = NPS_TRY(t.string("state_dir")))
        c.state_dir = *v;
    if (auto v = NPS_TRY(t.string("nid"))) {
        if (!proto::is_valid_nid(*v))
            return t.fail("nid", "'" + *v + "' is not a NID (urn:nps:…)");
        c.runner_nid = *v;
    }
    if (auto v = NPS_TRY(t.strings("inboxes"))) {
        for (const auto& nid : *v)
            if (!proto::is_valid_nid(nid))
                return t.fail("inboxes", "'" + nid + "' is not a NID (urn:nps:…)");
        c.inboxes = *v;
    }
    if (auto v = NPS_TRY(t.integer("lease_seconds", limits::kMinLeaseSeconds, limits::kMaxLeaseSeconds)))
        c.executor.lease_seconds = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("claim_interval_ms", 10, 60'000)))
        c.executor.claim_interval_ms = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("max_tasks", 0, static_cast<std::int64_t>(limits::kMaxRunnerTasks))))
        c.executor.max_tasks = static_cast<std::size_t>(*v);
    if (auto v = NPS_TRY(t.integer("shutdown_grace_seconds", 0, 3600)))
        c.executor.shutdown_grace_seconds = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.string("log_format"))) {
        if (*v == "text")
            c.log_json = false;
        else if (*v == "json")
            c.log_json = true;
        else
            return t.fail("log_format", "must be 'text' or 'json', not '" + *v + "'");
    }
    if (auto v = NPS_TRY(t.string("execution"))) {
        if (*v == "production")
            c.executor.conformance = false;
        else if (*v == "conformance")
            c.executor.conformance = true;
        else
            return t.fail("execution", "must be 'production' or 'conformance', not '" + *v + "'");
    }
    return {};
}

Result<void> apply_api(const TableReader& t, Config& c)
{
    NPS_TRY_VOID(
        t.check_keys({"listen", "socket", "socket_mode", "token", "token_file", "require_token", "allowed_nids",
                      "task_inbox"}));
    if (auto v = NPS_TRY(t.string("listen")))
        c.listen = *v;
    if (auto v = NPS_TRY(t.string("socket")))
        c.socket = *v;
    if (auto v = NPS_TRY(t.string("socket_mode"))) {
        char* end = nullptr;
        errno = 0;
        unsigned long mode = std::strtoul(v->c_str(), &end, 8);
        if (v->empty() || *end != '\0' || mode > 0777 || errno != 0)
            return t.fail("socket_mode", "'" + *v + "' is not an octal mode like \"0660\"");
        c.socket_mode = static_cast<mode_t>(mode);
    }
    auto token = NPS_TRY(t.string("token"));
    auto token_file = NPS_TRY(t.string("token_file"));
    if (token && token_file)
        return t.fail("token", "set either token or token_file, not both");
    if (token) {
        if (token->size() < 16)
            return t.fail("token", "must be at least 16 characters");
        c.token = *token;
    }
    if (token_file)
        c.token = NPS_TRY(read_token_file(*token_file, "api.token_file", 16));
    if (auto v = NPS_TRY(t.boolean("require_token")))
        c.require_token = *v;
    if (auto v = NPS_TRY(t.strings("allowed_nids"))) {
        for (const auto& nid : *v)
            if (!proto::is_valid_nid(nid))
                return t.fail("allowed_nids", "'" + nid + "' is not a NID (urn:nps:…)");
        c.allowed_nids = *v;
    }
    if (auto v = NPS_TRY(t.string("task_inbox"))) {
        if (!proto::is_valid_nid(*v))
            return t.fail("task_inbox", "'" + *v + "' is not a NID (urn:nps:…)");
        c.task_inbox = *v;
    }
    return {};
}

Result<void> apply_inbox(const TableReader& t, Config& c)
{
    NPS_TRY_VOID(t.check_keys({"default_ttl_seconds", "max_depth", "max_message_bytes", "max_inboxes"}));
    if (auto v = NPS_TRY(t.integer("max_inboxes", 1, 1'000'000)))
        c.max_inboxes = *v;
    if (auto v = NPS_TRY(t.integer("default_ttl_seconds", 1, limits::kMaxInboxTtlSeconds)))
        c.default_ttl_seconds = *v;
    if (auto v = NPS_TRY(t.integer("max_depth", 1, 100'000'000)))
        c.max_depth = *v;
    if (auto v = NPS_TRY(t.integer("max_message_bytes", 1024, static_cast<std::int64_t>(limits::kMaxBodyBytes))))
        c.max_message_bytes = static_cast<std::size_t>(*v);
    return {};
}

Result<void> apply_store(const TableReader& t, Config& c)
{
    NPS_TRY_VOID(
        t.check_keys({"url", "notify", "pooler", "synchronous", "progress_synchronous", "task_retention_hours"}));
    if (auto v = NPS_TRY(t.string("pooler"))) {
        if (*v == "none" || *v == "session")
            c.store_pooler = StorePooler::none;
        else if (*v == "transaction")
            c.store_pooler = StorePooler::transaction;
        else
            return t.fail("pooler", "must be \"none\", \"session\" or \"transaction\"");
    }
    const auto notify = NPS_TRY(t.boolean("notify"));
    if (c.store_pooler == StorePooler::transaction) {
        if (notify.value_or(false))
            return t.fail("notify", "cannot be true with pooler = \"transaction\": LISTEN needs a server session of "
                                    "its own, which a pooler in transaction mode does not keep");
        c.store_notify = false;
    } else if (notify) {
        c.store_notify = *notify;
    }
    if (auto v = NPS_TRY(t.string("url"))) {
        if (!v->empty() && !store::is_postgres_url(*v))
            return t.fail("url", "must be a postgresql:// URL (or empty for the embedded runner.db), not '" +
                                     store::redact_store_url(*v) + "'");
        c.store_url = *v;
    }
    // 1 s to 100 years; fractions of an hour allowed (0.5 = 30 minutes).
    if (auto v = NPS_TRY(t.number("task_retention_hours", 1.0 / 3600, 876'000)))
        c.task_retention_seconds = static_cast<std::int64_t>(*v * 3600 + 0.5);
    for (auto [key, target] : {std::pair{"synchronous", &c.synchronous},
                               std::pair{"progress_synchronous", &c.progress_synchronous}}) {
        if (auto v = NPS_TRY(t.string(key))) {
            if (*v == "full")
                *target = store::Synchronous::full;
            else if (*v == "normal")
                *target = store::Synchronous::normal;
            else
                return t.fail(key, "must be \"full\" or \"normal\"");
        }
    }
    return {};
}

// An operator-configured service: http or https, a host, no user-info
// (credentials do not belong in a config URL), no query or fragment.
Result<std::optional<std::string>> service_url(const TableReader& t, const std::string& key)
{
    auto v = NPS_TRY(t.string(key));
    if (!v)
        return v;
    if (!is_service_url(*v))
        return t.fail(key, "'" + *v + "' is not an http(s) URL with a host and no user-info, query or fragment");
    return v;
}

// A list of private destinations allowed (proto/destination_policy.hpp),
// parsed here once: at most `max` entries, each an IP, CIDR network or name.
Result<std::optional<std::vector<proto::DestinationAllowEntry>>> allow_list(const TableReader& t,
                                                                           const std::string& key, std::size_t max)
{
    using Entries = std::optional<std::vector<proto::DestinationAllowEntry>>;
    auto texts = NPS_TRY(t.strings(key));
    if (!texts)
        return Entries();
    if (texts->size() > max)
        return t.fail(key, "more than " + std::to_string(max) + " entries");
    std::vector<proto::DestinationAllowEntry> entries;
    for (const auto& text : *texts) {
        auto entry = proto::parse_destination_allow_entry(text);
        if (!entry)
            return t.fail(key, entry.error().message);
        entries.push_back(std::move(*entry));
    }
    return Entries(std::move(entries));
}

Result<void> apply_spawn(const TableReader& t, Config& c)
{
    NPS_TRY_VOID(t.check_keys({"allow_destinations", "ca_file", "registry_url", "nwp_resolver_url",
                                "fetch_timeout_seconds", "max_spec_bytes", "max_redirects", "cache_max_age_seconds",
                                "cache_entries"}));
    if (auto v = NPS_TRY(allow_list(t, "allow_destinations", limits::kMaxSpawnAllowDestinations)))
        c.spawn.allow_destinations = std::move(*v);
    if (auto v = NPS_TRY(t.string("ca_file"))) {
        if (v->empty() || v->front() != '/')
            return t.fail("ca_file", "must be an absolute path to a PEM file");
        c.spawn.ca_file = *v;
    }
    c.spawn.registry_url = NPS_TRY(service_url(t, "registry_url"));
    c.spawn.nwp_resolver_url = NPS_TRY(service_url(t, "nwp_resolver_url"));
    if (auto v = NPS_TRY(t.integer("fetch_timeout_seconds", 1, limits::kMaxSpawnFetchTimeoutSeconds)))
        c.spawn.fetch.timeout_ms = static_cast<int>(*v) * 1000;
    if (auto v = NPS_TRY(t.integer("max_spec_bytes", 1024, static_cast<std::int64_t>(limits::kMaxSpawnSpecBytes))))
        c.spawn.fetch.max_body_bytes = static_cast<std::size_t>(*v);
    if (auto v = NPS_TRY(t.integer("max_redirects", 0, limits::kMaxSpawnRedirects)))
        c.spawn.fetch.max_redirects = static_cast<unsigned>(*v);
    if (auto v = NPS_TRY(t.integer("cache_max_age_seconds", 0, limits::kMaxSpawnCacheMaxAgeSeconds)))
        c.spawn.cache_max_age_seconds = *v;
    if (auto v = NPS_TRY(t.integer("cache_entries", 0, static_cast<std::int64_t>(limits::kMaxSpawnCacheEntries))))
        c.spawn.cache_entries = static_cast<std::size_t>(*v);
    return {};
}

// [ndp]: require_signed, and [ndp.trusted_keys] "NID" = "ed25519:…" (or a
// list of them: a publisher may rotate keys).
Result<void> apply_ndp(const toml::table* table, const TableReader& t, const std::string& origin, Config& c)
{
    NPS_TRY_VOID(t.check_keys({"require_signed", "trusted_keys"}));
    if (auto v = NPS_TRY(t.boolean("require_signed")))
        c.announce_trust.require_signed = *v;
    const toml::node* keys = table ? table->get("trusted_keys") : nullptr;
    if (!keys)
        return {};
    if (!keys->is_table())
        return internal_error("Invalid configuration in '" + origin +
                              "': ndp.trusted_keys must be a table of \"NID\" = \"ed25519:…\"");
    for (const auto& [key, value] : *keys->as_table()) {
        const std::string nid(key.str());
        const std::string name = "ndp.trusted_keys.\"" + nid + "\"";
        if (!proto::is_valid_nid(nid))
            return internal_error("Invalid configuration in '" + origin + "': " + name + ": the key must be a NID");
        std::vector<std::string> texts;
        if (auto text = value.value<std::string>())
            texts.push_back(*text);
        else if (const toml::array* list = value.as_array())
            for (const auto& item : *list) {
                auto item_text = item.value<std::string>();
                if (!item_text)
                    return internal_error("Invalid configuration in '" + origin + "': " + name +
                                          ": expected \"ed25519:…\" strings");
                texts.push_back(*item_text);
            }
        else
            return internal_error("Invalid configuration in '" + origin + "': " + name +
                                  ": expected \"ed25519:…\" or a list of them");
        for (const auto& text : texts) {
            auto raw = proto::decode_ed25519_public_key(text, proto::code::kNpsServerInternal, name);
            if (!raw)
                return internal_error("Invalid configuration in '" + origin + "': " + raw.error().message);
            c.announce_trust.keys.push_back({.nid = nid, .public_key = std::move(*raw)});
        }
    }
    return {};
}

// A bearer token for a service, given inline (`key`) or in a file
// (`file_key`); either needs the service's URL (`url_key`) set.
Result<std::optional<std::string>> service_token(const TableReader& t, const std::string& key,
                                                 const std::string& file_key, bool has_url, const std::string& url_key)
{
    auto token = NPS_TRY(t.string(key));
    auto token_file = NPS_TRY(t.string(file_key));
    if (token && token_file)
        return t.fail(key, "set either " + key + " or " + file_key + ", not both");
    if (token_file) {
        if (token_file->empty())
            return t.fail(file_key, "must name a file");
        token = NPS_TRY(read_token_file(*token_file, t.name() + "." + file_key, 1));
    }
    if (!token)
        return token;
    const bool ok = !token->empty() && token->size() <= limits::kMaxReportTokenChars && !has_control(*token) &&
                    token->find(' ') == std::string::npos;
    if (!ok)
        return t.fail(token_file ? file_key : key, "the token must be 1 to " +
                                                       std::to_string(limits::kMaxReportTokenChars) +
                                                       " characters without spaces or control characters");
    if (!has_url)
        return t.fail(key, "is set but " + url_key + " is not");
    return token;
}

Result<void> apply_upstream(const TableReader& t, Config& c)
{
    NPS_TRY_VOID(t.check_keys({"npsd_url", "inbox", "token", "token_file", "wait_seconds", "batch"}));
    UpstreamPolicy& u = c.upstream;
    u.npsd_url = NPS_TRY(service_url(t, "npsd_url"));
    if (u.npsd_url)
        while (u.npsd_url->size() > 1 && u.npsd_url->back() == '/')
            u.npsd_url->pop_back();
    // The URL may come from serve --upstream-npsd, so a token alone is fine here.
    u.token = NPS_TRY(service_token(t, "token", "token_file", true, "npsd_url"));
    if (auto v = NPS_TRY(t.string("inbox"))) {
        if (!proto::is_valid_nid(*v))
            return t.fail("inbox", "'" + *v + "' is not a NID (urn:nps:…)");
        u.inbox = *v;
    }
    if (auto v = NPS_TRY(t.integer("wait_seconds", 1, limits::kMaxPeekWaitSeconds)))
        u.wait_seconds = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("batch", 1, limits::kMaxPeekBatch)))
        u.batch = static_cast<std::uint32_t>(*v);
    return {};
}

Result<void> apply_report(const TableReader& t, Config& c)
{
    NPS_TRY_VOID(t.check_keys({"task_store_url", "task_store_token", "task_store_token_file", "npsd_url",
                                "npsd_token", "npsd_token_file", "ca_file",
                                "timeout_seconds", "retry_initial_ms", "retry_max_ms", "max_age_seconds",
                                "callback_allow_destinations"}));
    ReportPolicy& r = c.report;
    r.task_store_url = NPS_TRY(service_url(t, "task_store_url"));
    if (r.task_store_url)
        while (r.task_store_url->size() > 1 && r.task_store_url->back() == '/')  // ".../tasks/" = ".../tasks"
            r.task_store_url->pop_back();
    r.task_store_token = NPS_TRY(service_token(t, "task_store_token", "task_store_token_file",
                                               r.task_store_url.has_value(), "task_store_url"));
    r.npsd_url = NPS_TRY(service_url(t, "npsd_url"));
    if (r.npsd_url)
        while (r.npsd_url->size() > 1 && r.npsd_url->back() == '/')
            r.npsd_url->pop_back();
    r.npsd_token = NPS_TRY(service_token(t, "npsd_token", "npsd_token_file", r.npsd_url.has_value(), "npsd_url"));
    if (auto v = NPS_TRY(t.string("ca_file"))) {
        if (v->empty() || v->front() != '/')
            return t.fail("ca_file", "must be an absolute path to a PEM file");
        r.ca_file = *v;
    }
    if (auto v = NPS_TRY(t.integer("timeout_seconds", 1, limits::kMaxReportTimeoutSeconds)))
        r.timeout_seconds = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("retry_initial_ms", limits::kMinReportRetryMs, limits::kMaxReportRetryMs)))
        r.retry_initial_ms = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("retry_max_ms", limits::kMinReportRetryMs, limits::kMaxReportRetryMs)))
        r.retry_max_ms = static_cast<std::uint32_t>(*v);
    if (r.retry_initial_ms > r.retry_max_ms)
        return t.fail("retry_initial_ms", "must not exceed retry_max_ms (" + std::to_string(r.retry_max_ms) + ")");
    if (auto v = NPS_TRY(t.integer("max_age_seconds", 60, limits::kMaxReportMaxAgeSeconds)))
        r.max_age_seconds = *v;
    if (auto v = NPS_TRY(allow_list(t, "callback_allow_destinations", limits::kMaxReportAllowDestinations)))
        r.callback_allow_destinations = std::move(*v);
    return {};
}

}  // namespace

std::string_view to_string(StorePooler pooler)
{
    return pooler == StorePooler::transaction ? "transaction" : "none";
}

bool is_service_url(std::string_view url)
{
    const auto parts = proto::split_url(url);
    return url.size() <= limits::kMaxUrlChars && parts &&
           (proto::iequals(parts->scheme, "http") || proto::iequals(parts->scheme, "https")) &&
           !parts->host.empty() && !parts->has_userinfo && parts->rest.find_first_of("?#") == std::string_view::npos;
}

std::string default_runner_nid()
{
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
        return "urn:nps:node:localhost:nps-runner";
    std::string name;
    for (const char* p = host; *p; ++p) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '.' || ch == '-';
        name.push_back(ok ? ch : '-');
    }
    return "urn:nps:node:" + name + ":nps-runner";
}

Result<Config> parse_config(const std::string& toml_text, const std::string& origin)
{
    // The packaged toml++ is built with exceptions; they stop here.
    toml::table root;
    try {
        root = toml::parse(toml_text, origin);
    } catch (const toml::parse_error& err) {
        std::ostringstream msg;
        msg << "Failed to parse configuration '" << origin << "' at line " << err.source().begin.line
            << ", column " << err.source().begin.column << ": " << err.description();
        return internal_error(msg.str());
    }
    Config config;
    static const std::set<std::string> sections = {"runner", "api", "inbox", "store", "sandbox", "images",
                                                       "workers", "spawn", "report", "ndp", "upstream"};
    for (const auto& [key, node] : root) {
        std::string name(key.str());
        if (!sections.count(name))
            return internal_error("Invalid configuration in '" + origin + "': unknown section [" + name + "]");
        if (!node.is_table())
            return internal_error("Invalid configuration in '" + origin + "': " + name + " must be a table");
    }
    auto table = [&](const char* name) { return TableReader(root[name].as_table(), name, origin); };
    NPS_TRY_VOID(apply_runner(table("runner"), config));
    NPS_TRY_VOID(apply_api(table("api"), config));
    NPS_TRY_VOID(apply_inbox(table("inbox"), config));
    NPS_TRY_VOID(apply_store(table("store"), config));
    NPS_TRY_VOID(detail::apply_sandbox(table("sandbox"), config));
    NPS_TRY_VOID(detail::apply_images(table("images"), config));
    NPS_TRY_VOID(detail::apply_workers(table("workers"), config));
    NPS_TRY_VOID(apply_spawn(table("spawn"), config));
    NPS_TRY_VOID(apply_report(table("report"), config));
    NPS_TRY_VOID(apply_ndp(root["ndp"].as_table(), table("ndp"), origin, config));
    NPS_TRY_VOID(apply_upstream(table("upstream"), config));
    if (config.runner_nid.empty())
        config.runner_nid = default_runner_nid();
    return config;
}

Result<Config> load_config(const std::string& path, bool required)
{
    std::ifstream in(path);
    if (!in) {
        if (errno == ENOENT && !required) {
            Config config;
            config.runner_nid = default_runner_nid();
            return config;
        }
        return system_error_errno("Failed to read configuration '" + path + "'");
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (text.str().size() > 1024 * 1024)
        return internal_error("Configuration '" + path + "' is larger than 1 MiB");
    return parse_config(text.str(), path);
}

}  // namespace nps::config
