// SPDX-License-Identifier: Apache-2.0
#include "nps/config/describe.hpp"

#include <toml++/toml.h>

#include <filesystem>

#include "nps/spawn/quantity.hpp"

namespace nps::config {

namespace {

using Json = nlohmann::json;

Json optional_text(const std::optional<std::string>& text)
{
    return text ? Json(*text) : Json(nullptr);
}

Json secret(bool set)
{
    return set ? Json("(set)") : Json(nullptr);
}

Json memory(std::uint64_t bytes)
{
    return bytes == 0 ? Json("0") : Json(spawn::format_memory_quantity(static_cast<std::int64_t>(bytes)));
}

Json cpu(std::int64_t millicores)
{
    return millicores == 0 ? Json("0") : Json(spawn::format_cpu_quantity(millicores));
}

// An allow-list as the operator wrote it.
Json entries_text(const std::vector<proto::DestinationAllowEntry>& entries)
{
    Json out = Json::array();
    for (const auto& entry : entries)
        out.push_back(entry.text);
    return out;
}

const char* synchronous_name(store::Synchronous s)
{
    return s == store::Synchronous::full ? "full" : "normal";
}

std::string octal_mode(mode_t mode)
{
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode));
    return text;
}

}  // namespace

const char* to_string(SettingSource source)
{
    switch (source) {
    case SettingSource::file: return "file";
    case SettingSource::flag: return "flag";
    case SettingSource::default_value: break;
    }
    return "default";
}

std::vector<Setting> describe(const Config& c, const std::set<std::string>& from_file,
                              const std::set<std::string>& from_flags)
{
    const executor::WorkerPolicy& w = c.workers;
    Json auth = Json::array();
    for (const auto& [host, entry] : c.registries.credentials)
        auth.push_back(host);
    Json trusted = Json::array();
    for (const auto& key : c.announce_trust.keys)
        trusted.push_back(key.nid);
    std::vector<std::pair<std::string, Json>> values = {
        {"runner.state_dir", c.state_dir},
        {"runner.nid", c.runner_nid},
        {"runner.inboxes", c.inboxes},
        {"runner.lease_seconds", c.executor.lease_seconds},
        {"runner.claim_interval_ms", c.executor.claim_interval_ms},
        {"runner.max_tasks", c.executor.max_tasks},
        {"runner.execution", c.executor.conformance ? "conformance" : "production"},
        {"runner.shutdown_grace_seconds", c.executor.shutdown_grace_seconds},
        {"runner.log_format", c.log_json ? "json" : "text"},
        {"api.listen", c.listen.empty() ? Json("none") : Json(c.listen)},
        {"api.socket", c.socket.empty() ? Json("none") : Json(c.socket)},
        {"api.socket_mode", octal_mode(c.socket_mode)},
        {"api.token", secret(c.token.has_value())},
        {"api.require_token", c.require_token},
        {"api.allowed_nids", c.allowed_nids},
        {"api.task_inbox", c.task_inbox},
        {"inbox.default_ttl_seconds", c.default_ttl_seconds},
        {"inbox.max_depth", c.max_depth},
        {"inbox.max_message_bytes", c.max_message_bytes},
        {"inbox.max_inboxes", c.max_inboxes},
        {"store.url", c.store_url.empty() ? Json("none (runner.db)") : Json(store::redact_store_url(c.store_url))},
        {"store.notify", c.store_notify},
        {"store.pooler", to_string(c.store_pooler)},
        {"store.synchronous", synchronous_name(c.synchronous)},
        {"store.progress_synchronous", synchronous_name(c.progress_synchronous)},
        {"store.task_retention_hours", static_cast<double>(c.task_retention_seconds) / 3600.0},
        {"sandbox.allow_host_network", c.allow_host_network},
        {"sandbox.allow_unenforced_limits", c.allow_unenforced_limits},
        {"sandbox.seccomp_allow", c.seccomp_allow},
        {"sandbox.user_namespace", to_string(c.user_namespace)},
        {"sandbox.userns_first_host_id", c.userns_first_host_id},
        {"sandbox.userns_id_count", c.userns_id_count},
        {"images.gc_max_bytes", memory(c.images_gc_max_bytes)},
        {"images.gc_max_disk_percent", c.images_gc_max_disk_percent},
        {"images.default_registry", c.registries.default_registry},
        {"images.insecure_registries", c.registries.insecure_registries},
        {"images.ca_file", c.registries.ca_file},
        {"images.auth", std::move(auth)},
        {"workers.max_concurrent", w.max_concurrent},
        {"workers.default_idle_timeout_seconds", w.default_idle_timeout_seconds},
        {"workers.default_max_runtime_seconds", w.default_max_runtime_seconds},
        {"workers.max_runtime_seconds_ceiling", w.max_runtime_seconds_ceiling},
        {"workers.stop_grace_seconds", w.stop_grace_seconds},
        {"workers.default_memory", memory(static_cast<std::uint64_t>(w.default_memory_bytes))},
        {"workers.max_memory", memory(static_cast<std::uint64_t>(w.max_memory_bytes))},
        {"workers.default_cpu", cpu(w.default_cpu_millicores)},
        {"workers.max_cpu", cpu(w.max_cpu_millicores)},
        {"workers.default_pids", w.default_pids},
        {"workers.max_pids", w.max_pids},
        {"workers.default_disk", memory(w.default_disk)},
        {"workers.max_disk", memory(w.max_disk)},
        {"workers.log_max_bytes", memory(w.log_max_bytes)},
        {"workers.log_keep", w.log_keep},
        {"workers.log_retention_hours", w.log_retention_hours},
        {"workers.logs_max_bytes", memory(w.logs_max_bytes)},
        {"workers.spawn_pool", w.spawn_pool},
        {"workers.spawn_server", w.spawn_server},
        {"workers.hold_ahead", w.hold_ahead},
        {"workers.warm_seconds", w.warm_seconds},
        {"spawn.allow_destinations", entries_text(c.spawn.allow_destinations)},
        {"spawn.ca_file", optional_text(c.spawn.ca_file)},
        {"spawn.registry_url", optional_text(c.spawn.registry_url)},
        {"spawn.nwp_resolver_url", optional_text(c.spawn.nwp_resolver_url)},
        {"spawn.fetch_timeout_seconds", c.spawn.fetch.timeout_ms / 1000},
        {"spawn.max_spec_bytes", c.spawn.fetch.max_body_bytes},
        {"spawn.max_redirects", c.spawn.fetch.max_redirects},
        {"spawn.cache_max_age_seconds", c.spawn.cache_max_age_seconds},
        {"spawn.cache_entries", c.spawn.cache_entries},
        {"ndp.require_signed", c.announce_trust.require_signed},
        {"ndp.trusted_keys", std::move(trusted)},
        {"upstream.npsd_url", optional_text(c.upstream.npsd_url)},
        {"upstream.inbox", c.upstream.inbox},
        {"upstream.token", secret(c.upstream.token.has_value())},
        {"upstream.wait_seconds", c.upstream.wait_seconds},
        {"upstream.batch", c.upstream.batch},
        {"report.task_store_url", optional_text(c.report.task_store_url)},
        {"report.task_store_token", secret(c.report.task_store_token.has_value())},
        {"report.npsd_url", optional_text(c.report.npsd_url)},
        {"report.npsd_token", secret(c.report.npsd_token.has_value())},
        {"report.ca_file", optional_text(c.report.ca_file)},
        {"report.timeout_seconds", c.report.timeout_seconds},
        {"report.retry_initial_ms", c.report.retry_initial_ms},
        {"report.retry_max_ms", c.report.retry_max_ms},
        {"report.max_age_seconds", c.report.max_age_seconds},
        {"report.callback_allow_destinations", entries_text(c.report.callback_allow_destinations)},
    };
    // A key set through its *_file twin counts as set by the file.
    const auto in_file = [&from_file](const std::string& key) {
        return from_file.count(key) || from_file.count(key + "_file");
    };
    std::vector<Setting> settings;
    settings.reserve(values.size());
    for (auto& [key, value] : values) {
        Setting s{key, std::move(value)};
        if (from_flags.count(key))
            s.source = SettingSource::flag;
        else if (in_file(key))
            s.source = SettingSource::file;
        settings.push_back(std::move(s));
    }
    return settings;
}

Result<std::set<std::string>> keys_in_file(const std::string& path)
{
    std::set<std::string> keys;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        return keys;
    toml::table root;
    try {
        root = toml::parse_file(path);
    } catch (const toml::parse_error& err) {
        return internal_error("Invalid configuration in '" + path + "': " + std::string(err.description()));
    }
    for (const auto& [section, node] : root) {
        if (const toml::table* table = node.as_table()) {
            for (const auto& [key, value] : *table)
                keys.insert(std::string(section.str()) + "." + std::string(key.str()));
        }
    }
    return keys;
}

}  // namespace nps::config
