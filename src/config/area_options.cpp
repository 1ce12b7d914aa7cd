// SPDX-License-Identifier: Apache-2.0
#include "nps/config/area_options.hpp"

namespace nps::config {

supervisor::SupervisorOptions supervisor_options(const Config& config)
{
    const WorkerPolicy& w = config.workers;
    supervisor::SupervisorOptions options;
    options.max_concurrent = w.max_concurrent;
    options.default_idle_timeout = std::chrono::seconds(w.default_idle_timeout_seconds);
    options.default_max_runtime = std::chrono::seconds(w.default_max_runtime_seconds);
    options.stop_grace = std::chrono::seconds(w.stop_grace_seconds);
    options.log_limits = {.max_bytes = w.log_max_bytes, .keep = w.log_keep};
    options.spawn_pool = w.spawn_pool;
    return options;
}

spawn::SpawnCeilings spawn_ceilings(const WorkerPolicy& policy)
{
    return {.max_memory_bytes = policy.max_memory_bytes,
            .max_cpu_millicores = policy.max_cpu_millicores,
            .max_runtime_seconds = policy.max_runtime_seconds_ceiling};
}

spawn::ResolverOptions resolver_options(const Config& config)
{
    return spawn::ResolverOptions{
        .allow_destinations = config.spawn_allow_destinations,
        .ca_file = config.spawn_ca_file,
        .registry_url = config.spawn_registry_url,
        .nwp_resolver_url = config.spawn_nwp_resolver_url,
        .fetch = net::FetchLimits{
            .timeout_ms = static_cast<int>(config.spawn_fetch_timeout_seconds) * 1000,
            .max_body_bytes = config.spawn_max_spec_bytes,
            .max_redirects = config.spawn_max_redirects,
        },
        .cache_max_age_seconds = config.spawn_cache_max_age_seconds,
        .cache_entries = config.spawn_cache_entries,
    };
}

report::DelivererOptions deliverer_options(const Config& config)
{
    const ReportPolicy& r = config.report;
    report::DelivererOptions options{
        .database_path = config.database_path(),
        .store_url = config.store_url,
        .synchronous = config.synchronous,
        .owner_prefix = config.runner_nid.empty() ? std::string("nps-runner") : config.runner_nid,
        .task_store_url = r.task_store_url,
        .task_store_token = r.task_store_token,
        .npsd_url = r.npsd_url,
        .npsd_token = r.npsd_token,
        .ca_file = r.ca_file,
        .timeout = std::chrono::seconds(r.timeout_seconds),
        .retry_initial = std::chrono::milliseconds(r.retry_initial_ms),
        .retry_max = std::chrono::milliseconds(r.retry_max_ms),
        .max_age = std::chrono::seconds(r.max_age_seconds),
        .callback_allow = r.callback_allow_destinations,
    };
    return options;
}

image::RegistrySettings registry_settings(const Config& config)
{
    image::RegistrySettings settings{.default_registry = config.images_default_registry,
                                     .insecure_registries = config.images_insecure_registries,
                                     .ca_file = config.images_ca_file};
    for (const auto& [registry, auth] : config.images_auth)
        settings.credentials[registry] = {.username = auth.username,
                                          .password = auth.password,
                                          .password_file = auth.password_file};
    return settings;
}

}  // namespace nps::config
