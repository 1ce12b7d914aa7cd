// SPDX-License-Identifier: Apache-2.0
#include "nps/config/reload.hpp"

#include <functional>

namespace nps::config {

namespace {

// One configuration key: how to compare it and, if it is reloadable, how to
// take the new value. A key missing from this table would silently never be
// reported; tests/unit/config_reload_test.cpp changes every key of a sample
// file and checks that each one is reported.
struct Key {
    const char* name;
    std::function<bool(const Config&, const Config&)> differs;
    std::function<void(Config&, const Config&)> apply;  // empty: needs a restart
};

template <typename Field>
Key reloadable(const char* name, Field field)
{
    return {name, [field](const Config& a, const Config& b) { return field(a) != field(b); },
            [field](Config& running, const Config& fresh) { field(running) = field(fresh); }};
}

template <typename Field>
Key restart_only(const char* name, Field field)
{
    return {name, [field](const Config& a, const Config& b) { return field(a) != field(b); }, {}};
}

// Lambdas returning references, so one accessor serves comparing and assigning.
#define NPS_FIELD(expr) [](auto& c) -> auto& { return c.expr; }

const std::vector<Key>& keys()
{
    static const std::vector<Key> table = {
        // [runner]
        restart_only("runner.state_dir", NPS_FIELD(state_dir)),
        restart_only("runner.nid", NPS_FIELD(runner_nid)),
        restart_only("runner.inboxes", NPS_FIELD(inboxes)),
        reloadable("runner.lease_seconds", NPS_FIELD(executor.lease_seconds)),
        reloadable("runner.claim_interval_ms", NPS_FIELD(executor.claim_interval_ms)),
        reloadable("runner.max_tasks", NPS_FIELD(executor.max_tasks)),
        restart_only("runner.execution", NPS_FIELD(executor.conformance)),
        reloadable("runner.shutdown_grace_seconds", NPS_FIELD(executor.shutdown_grace_seconds)),
        reloadable("runner.log_format", NPS_FIELD(log_json)),
        // [api]
        restart_only("api.listen", NPS_FIELD(listen)),
        restart_only("api.socket", NPS_FIELD(socket)),
        restart_only("api.socket_mode", NPS_FIELD(socket_mode)),
        reloadable("api.token", NPS_FIELD(token)),
        restart_only("api.require_token", NPS_FIELD(require_token)),
        reloadable("api.allowed_nids", NPS_FIELD(allowed_nids)),
        // [inbox]
        reloadable("inbox.default_ttl_seconds", NPS_FIELD(default_ttl_seconds)),
        reloadable("inbox.max_depth", NPS_FIELD(max_depth)),
        reloadable("inbox.max_message_bytes", NPS_FIELD(max_message_bytes)),
        reloadable("inbox.max_inboxes", NPS_FIELD(max_inboxes)),
        // [store]
        restart_only("store.url", NPS_FIELD(store_url)),
        restart_only("store.notify", NPS_FIELD(store_notify)),
        restart_only("store.pooler", NPS_FIELD(store_pooler)),
        restart_only("store.synchronous", NPS_FIELD(synchronous)),
        restart_only("store.progress_synchronous", NPS_FIELD(progress_synchronous)),
        restart_only("store.task_retention_hours", NPS_FIELD(task_retention_seconds)),
        // [sandbox]
        restart_only("sandbox.allow_host_network", NPS_FIELD(allow_host_network)),
        restart_only("sandbox.allow_unenforced_limits", NPS_FIELD(allow_unenforced_limits)),
        restart_only("sandbox.seccomp_allow", NPS_FIELD(seccomp_allow)),
        restart_only("sandbox.user_namespace", NPS_FIELD(user_namespace)),
        restart_only("sandbox.userns_first_host_id", NPS_FIELD(userns_first_host_id)),
        restart_only("sandbox.userns_id_count", NPS_FIELD(userns_id_count)),
        // [images]
        restart_only("images.gc_max_bytes", NPS_FIELD(images_gc_max_bytes)),
        restart_only("images.gc_max_disk_percent", NPS_FIELD(images_gc_max_disk_percent)),
        restart_only("images.default_registry", NPS_FIELD(registries.default_registry)),
        restart_only("images.insecure_registries", NPS_FIELD(registries.insecure_registries)),
        restart_only("images.ca_file", NPS_FIELD(registries.ca_file)),
        {"images.auth",
         [](const Config& a, const Config& b) {
             if (a.registries.credentials.size() != b.registries.credentials.size())
                 return true;
             for (auto i = a.registries.credentials.begin(), j = b.registries.credentials.begin(); i != a.registries.credentials.end(); ++i, ++j)
                 if (i->first != j->first || i->second.username != j->second.username ||
                     i->second.password != j->second.password || i->second.password_file != j->second.password_file)
                     return true;
             return false;
         },
         {}},
        // [workers]
        reloadable("workers.max_concurrent", NPS_FIELD(workers.max_concurrent)),
        reloadable("workers.default_idle_timeout_seconds", NPS_FIELD(workers.default_idle_timeout_seconds)),
        reloadable("workers.default_max_runtime_seconds", NPS_FIELD(workers.default_max_runtime_seconds)),
        reloadable("workers.stop_grace_seconds", NPS_FIELD(workers.stop_grace_seconds)),
        reloadable("workers.log_max_bytes", NPS_FIELD(workers.log_max_bytes)),
        reloadable("workers.log_keep", NPS_FIELD(workers.log_keep)),
        reloadable("workers.log_retention_hours", NPS_FIELD(workers.log_retention_hours)),
        restart_only("workers.spawn_pool", NPS_FIELD(workers.spawn_pool)),
        restart_only("workers.spawn_server", NPS_FIELD(workers.spawn_server)),
        reloadable("workers.hold_ahead", NPS_FIELD(workers.hold_ahead)),
        reloadable("workers.warm_seconds", NPS_FIELD(workers.warm_seconds)),
        reloadable("workers.default_disk", NPS_FIELD(workers.default_disk)),
        reloadable("workers.max_disk", NPS_FIELD(workers.max_disk)),
        reloadable("workers.logs_max_bytes", NPS_FIELD(workers.logs_max_bytes)),
        reloadable("workers.default_memory", NPS_FIELD(workers.default_memory_bytes)),
        reloadable("workers.default_cpu", NPS_FIELD(workers.default_cpu_millicores)),
        reloadable("workers.default_pids", NPS_FIELD(workers.default_pids)),
        reloadable("workers.max_memory", NPS_FIELD(workers.max_memory_bytes)),
        reloadable("workers.max_cpu", NPS_FIELD(workers.max_cpu_millicores)),
        reloadable("workers.max_pids", NPS_FIELD(workers.max_pids)),
        reloadable("workers.max_runtime_seconds_ceiling", NPS_FIELD(workers.max_runtime_seconds_ceiling)),
        // [spawn]
        restart_only("spawn.allow_destinations", NPS_FIELD(spawn.allow_destinations)),
        restart_only("spawn.ca_file", NPS_FIELD(spawn.ca_file)),
        restart_only("spawn.registry_url", NPS_FIELD(spawn.registry_url)),
        restart_only("spawn.nwp_resolver_url", NPS_FIELD(spawn.nwp_resolver_url)),
        restart_only("spawn.fetch_timeout_seconds", NPS_FIELD(spawn.fetch.timeout_ms)),
        restart_only("spawn.max_spec_bytes", NPS_FIELD(spawn.fetch.max_body_bytes)),
        restart_only("spawn.max_redirects", NPS_FIELD(spawn.fetch.max_redirects)),
        restart_only("spawn.cache_max_age_seconds", NPS_FIELD(spawn.cache_max_age_seconds)),
        restart_only("spawn.cache_entries", NPS_FIELD(spawn.cache_entries)),
        // [report]
        restart_only("report.task_store_url", NPS_FIELD(report.task_store_url)),
        restart_only("report.task_store_token", NPS_FIELD(report.task_store_token)),
        restart_only("report.npsd_url", NPS_FIELD(report.npsd_url)),
        restart_only("report.npsd_token", NPS_FIELD(report.npsd_token)),
        restart_only("report.ca_file", NPS_FIELD(report.ca_file)),
        restart_only("report.timeout_seconds", NPS_FIELD(report.timeout_seconds)),
        restart_only("report.retry_initial_ms", NPS_FIELD(report.retry_initial_ms)),
        restart_only("report.retry_max_ms", NPS_FIELD(report.retry_max_ms)),
        restart_only("report.max_age_seconds", NPS_FIELD(report.max_age_seconds)),
        restart_only("report.callback_allow_destinations", NPS_FIELD(report.callback_allow_destinations)),
        // [upstream]
        restart_only("upstream.npsd_url", NPS_FIELD(upstream.npsd_url)),
        restart_only("upstream.inbox", NPS_FIELD(upstream.inbox)),
        restart_only("upstream.token", NPS_FIELD(upstream.token)),
        restart_only("upstream.wait_seconds", NPS_FIELD(upstream.wait_seconds)),
        restart_only("upstream.batch", NPS_FIELD(upstream.batch)),
    };
    return table;
}

#undef NPS_FIELD

}  // namespace

ReloadOutcome apply_reload(Config& running, const Config& fresh)
{
    ReloadOutcome outcome;
    for (const auto& key : keys()) {
        if (!key.differs(running, fresh))
            continue;
        if (key.apply) {
            key.apply(running, fresh);
            outcome.applied.emplace_back(key.name);
        } else {
            outcome.need_restart.emplace_back(key.name);
        }
    }
    return outcome;
}

std::vector<std::string> reloadable_keys()
{
    std::vector<std::string> names;
    for (const auto& key : keys())
        if (key.apply)
            names.emplace_back(key.name);
    return names;
}

}  // namespace nps::config
