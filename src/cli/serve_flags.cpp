// SPDX-License-Identifier: Apache-2.0
#include "serve_flags.hpp"

#include "nps/proto/task_frame.hpp"

namespace nps::cli {

namespace {

// Each overriding flag and the key it sets.
struct FlagKey {
    const char* flag;
    const char* key;
};
constexpr FlagKey kFlagKeys[] = {
    {"--state-dir", "runner.state_dir"}, {"--listen", "api.listen"},   {"--socket", "api.socket"},
    {"--runner-nid", "runner.nid"},      {"--inbox", "runner.inboxes"}, {"--upstream-npsd", "upstream.npsd_url"},
    {"--store", "store.url"},
};

}  // namespace

std::vector<OptionSpec> serve_config_options()
{
    return {
        {"--config", "FILE", "configuration file (default /etc/nps-runner/config.toml; missing default is fine)"},
        {"--state-dir", "DIR", "state directory holding runner.db (default /var/lib/nps-runner)"},
        {"--listen", "ADDR:PORT", "TCP listener (default 127.0.0.1:17437; 'none' disables it; port 0 = any)"},
        {"--socket", "PATH", "unix socket (default /run/nps-runner/api.sock; 'none' disables it)"},
        {"--runner-nid", "NID", "this runner's NID (default urn:nps:node:<hostname>:nps-runner)"},
        {"--inbox", "NID", "an inbox this runner claims and executes from", true},
        {"--upstream-npsd", "URL", "pull the (first) inbox's TaskFrames from this npsd (http(s) API root)"},
        {"--store", "URL",
         "task store shared by several hosts: postgresql://… (libpq URI; default: <state-dir>/runner.db)"},
    };
}

Result<void> check_serve_flags(const ParsedArgs& args)
{
    if (auto v = args.value("--runner-nid"); v && !proto::is_valid_nid(*v))
        return internal_error("--runner-nid '" + *v + "' is not a NID (urn:nps:…)");
    for (const auto& nid : args.values("--inbox"))
        if (!proto::is_valid_nid(nid))
            return internal_error("--inbox '" + nid + "' is not a NID (urn:nps:…)");
    if (auto v = args.value("--upstream-npsd"); v && !config::is_service_url(*v))
        return internal_error("--upstream-npsd '" + *v + "' is not an http(s) URL with a host");
    if (auto v = args.value("--store"); v && !v->empty() && !store::is_postgres_url(*v))
        return internal_error("--store '" + store::redact_store_url(*v) +
                              "' is not a postgresql:// URL (leave it out for the embedded runner.db)");
    return {};
}

std::string serve_config_path(const ParsedArgs& args)
{
    return args.value("--config").value_or(config::kDefaultConfigPath);
}

Result<config::Config> load_serve_config(const ParsedArgs& args)
{
    auto config = NPS_TRY(config::load_config(serve_config_path(args), args.value("--config").has_value()));
    if (auto v = args.value("--state-dir"))
        config.state_dir = *v;
    if (auto v = args.value("--listen"))
        config.listen = *v == "none" ? "" : *v;
    if (auto v = args.value("--socket"))
        config.socket = *v == "none" ? "" : *v;
    if (auto v = args.value("--runner-nid"))
        config.runner_nid = *v;
    if (args.flag("--inbox"))
        config.inboxes = args.values("--inbox");
    if (auto v = args.value("--store"))
        config.store_url = *v;
    if (auto v = args.value("--upstream-npsd")) {
        config.upstream.npsd_url = *v;
        while (config.upstream.npsd_url->size() > 1 && config.upstream.npsd_url->back() == '/')
            config.upstream.npsd_url->pop_back();
        if (args.flag("--inbox"))
            config.upstream.inbox = config.inboxes.front();
    }
    return config;
}

std::set<std::string> keys_set_by_flags(const ParsedArgs& args)
{
    std::set<std::string> keys;
    for (const auto& [flag, key] : kFlagKeys)
        if (args.flag(flag))
            keys.insert(key);
    if (args.flag("--upstream-npsd") && args.flag("--inbox"))
        keys.insert("upstream.inbox");
    return keys;
}

}  // namespace nps::cli
