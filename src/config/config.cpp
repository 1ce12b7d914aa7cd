// SPDX-License-Identifier: Apache-2.0
#include "nps/config/config.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <fstream>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "nps/base/limits.hpp"
#include "nps/image/reference.hpp"
#include "nps/proto/destination_policy.hpp"
#include "nps/proto/ed25519.hpp"
#include "nps/proto/task_frame.hpp"
#include "nps/proto/url.hpp"
#include "nps/spawn/quantity.hpp"

namespace nps::config {

namespace {

// Bounds of [workers] keys added for issue 14 (docs/configuration.md "Limits").
constexpr std::int64_t kMaxWorkerPids = 4'194'304;              // the kernel's PID_MAX_LIMIT
constexpr std::int64_t kMaxRuntimeSecondsCeiling = 2'147'483'647;  // a SpawnSpec's own maximum
constexpr std::uint64_t kMaxWorkerLogsTotalBytes = std::uint64_t{1} << 50;

// A bound as a person writes it: 0.000278, 876000.
std::string format_number(double value)
{
    std::ostringstream out;
    out << value;
    return out.str();
}

// Reads one table, rejecting keys it does not know.
class TableReader {
public:
    TableReader(const toml::table* table, std::string name, const std::string& origin)
        : table_(table), name_(std::move(name)), origin_(origin) {}

    const std::string& name() const { return name_; }

    Result<void> check_keys(std::set<std::string> known) const
    {
        if (!table_)
            return {};
        for (const auto& [key, _] : *table_)
            if (!known.count(std::string(key.str())))
                return fail(std::string(key.str()), "unknown key");
        return {};
    }

    Result<std::optional<std::string>> string(const std::string& key) const
    {
        const toml::node* node = find(key);
        if (!node)
            return std::optional<std::string>{};
        if (auto v = node->value<std::string>())
            return std::optional<std::string>{*v};
        return fail(key, "expected a string");
    }

    Result<std::optional<std::int64_t>> integer(const std::string& key, std::int64_t min,
                                                std::int64_t max) const
    {
        const toml::node* node = find(key);
        if (!node)
            return std::optional<std::int64_t>{};
        auto v = node->value_exact<std::int64_t>();
        if (!v)
            return fail(key, "expected an integer");
        if (*v < min || *v > max)
            return fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
        return std::optional<std::int64_t>{*v};
    }

    // An integer or a float, within [min, max].
    Result<std::optional<double>> number(const std::string& key, double min, double max) const
    {
        const toml::node* node = find(key);
        if (!node)
            return std::optional<double>{};
        std::optional<double> v;
        if (auto i = node->value_exact<std::int64_t>())
            v = static_cast<double>(*i);
        else if (auto d = node->value_exact<double>())
            v = *d;
        if (!v)
            return fail(key, "expected a number");
        if (!(*v >= min && *v <= max))
            return fail(key, "must be between " + format_number(min) + " and " + format_number(max));
        return v;
    }

    Result<std::optional<bool>> boolean(const std::string& key) const
    {
        const toml::node* node = find(key);
        if (!node)
            return std::optional<bool>{};
        if (auto v = node->value_exact<bool>())
            return std::optional<bool>{*v};
        return fail(key, "expected true or false");
    }

    Result<std::optional<std::vector<std::string>>> strings(const std::string& key) const
    {
        const toml::node* node = find(key);
        if (!node)
            return std::optional<std::vector<std::string>>{};
        const toml::array* array = node->as_array();
        if (!array)
            return fail(key, "expected an array of strings");
        std::vector<std::string> out;
        for (const auto& element : *array) {
            auto v = element.value<std::string>();
            if (!v)
                return fail(key, "expected an array of strings");
            out.push_back(*v);
        }
        return std::optional<std::vector<std::string>>{std::move(out)};
    }

    Error fail(const std::string& key, const std::string& what) const
    {
        return internal_error("Invalid configuration in '" + origin_ + "': " + name_ + "." + key + ": " + what);
    }

private:
    const toml::node* find(const std::string& key) const
    {
        return table_ ? table_->get(key) : nullptr;
    }

    const toml::table* table_;
    std::string name_;
    const std::string& origin_;
};

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
    NPS_TRY_VOID(t.check_keys({"url", "notify", "synchronous", "progress_synchronous", "task_retention_hours"}));
    if (auto v = NPS_TRY(t.boolean("notify")))
        c.store_notify = *v;
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

}  // namespace

const char* to_string(UserNamespaceMode mode)
{
    switch (mode) {
    case UserNamespaceMode::on: return "on";
    case UserNamespaceMode::off: return "off";
    case UserNamespaceMode::automatic: break;
    }
    return "auto";
}

namespace {

Result<std::optional<bool>> boolean(const toml::table* table, const std::string& key, const TableReader& t)
{
    const toml::node* node = table ? table->get(key) : nullptr;
    if (!node)
        return std::optional<bool>{};
    if (auto v = node->value_exact<bool>())
        return std::optional<bool>{*v};
    return t.fail(key, "expected true or false");
}

Result<void> apply_sandbox(const toml::table* table, const TableReader& t, Config& c)
{
    NPS_TRY_VOID(t.check_keys({"allow_host_network", "allow_unenforced_limits", "seccomp_allow", "user_namespace",
                                "userns_first_host_id", "userns_id_count"}));
    if (const toml::node* node = table ? table->get("user_namespace") : nullptr) {
        if (auto v = node->value_exact<bool>())
            c.user_namespace = *v ? UserNamespaceMode::on : UserNamespaceMode::off;
        else if (auto text = node->value_exact<std::string>(); text && *text == "auto")
            c.user_namespace = UserNamespaceMode::automatic;
        else if (text && (*text == "on" || *text == "off"))
            c.user_namespace = *text == "on" ? UserNamespaceMode::on : UserNamespaceMode::off;
        else
            return t.fail("user_namespace", "must be \"auto\", \"on\" or \"off\" (or true / false)");
    }
    if (auto v = NPS_TRY(t.integer("userns_first_host_id", 1, 4'000'000'000)))
        c.userns_first_host_id = *v;
    if (auto v = NPS_TRY(t.integer("userns_id_count", 1, 1'000'000'000)))
        c.userns_id_count = *v;
    if (auto v = NPS_TRY(boolean(table, "allow_host_network", t)))
        c.allow_host_network = *v;
    if (auto v = NPS_TRY(boolean(table, "allow_unenforced_limits", t)))
        c.allow_unenforced_limits = *v;
    if (auto v = NPS_TRY(t.strings("seccomp_allow"))) {
        for (const auto& name : *v) {
            bool ok = !name.empty() && name.size() <= 64 &&
                      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
            if (!ok)
                return t.fail("seccomp_allow", "'" + name + "' is not a system call name");
        }
        c.seccomp_allow = *v;
    }
    return {};
}

bool has_control(const std::string& s)
{
    for (char ch : s)
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
            return true;
    return false;
}

Result<void> apply_registry_auth(const toml::node* node, const std::string& origin, Config& c)
{
    if (!node)
        return {};
    const toml::table* auth = node->as_table();
    if (!auth)
        return internal_error("Invalid configuration in '" + origin + "': images.auth must be a table of registries "
                              "([images.auth.\"host:port\"])");
    for (const auto& [key, value] : *auth) {
        const std::string registry(key.str());
        const std::string name = "images.auth.\"" + registry + "\"";
        if (!image::is_valid_registry_host(registry))
            return internal_error("Invalid configuration in '" + origin + "': " + name +
                                  ": the key must be a registry HOST[:PORT] as written in image references");
        if (!value.is_table())
            return internal_error("Invalid configuration in '" + origin + "': " + name + " must be a table");
        const TableReader t(value.as_table(), name, origin);
        NPS_TRY_VOID(t.check_keys({"username", "password", "password_file"}));
        RegistryAuth entry;
        auto username = NPS_TRY(t.string("username"));
        if (!username || username->empty() || username->find(':') != std::string::npos || has_control(*username))
            return t.fail("username", "is required: a non-empty name without ':'");
        entry.username = *username;
        auto password = NPS_TRY(t.string("password"));
        auto password_file = NPS_TRY(t.string("password_file"));
        if (password.has_value() == password_file.has_value())
            return t.fail("password", "set exactly one of password and password_file");
        if (password && has_control(*password))
            return t.fail("password", "must not contain control characters");
        if (password_file && password_file->empty())
            return t.fail("password_file", "must name a file");
        entry.password = password.value_or("");
        entry.password_file = password_file.value_or("");
        for (const auto& [known, _] : c.images_auth)
            if (image::same_registry(known, registry))
                return t.fail("username", "the registry '" + registry + "' is configured twice");
        c.images_auth.emplace(registry, std::move(entry));
    }
    return {};
}

Result<void> apply_images(const toml::table* table, const TableReader& t, const std::string& origin, Config& c)
{
    NPS_TRY_VOID(t.check_keys({"gc_max_bytes", "gc_max_disk_percent", "default_registry", "insecure_registries",
                                "ca_file", "auth"}));
    if (auto v = NPS_TRY(t.string("gc_max_bytes"))) {
        auto bytes = spawn::parse_memory_bytes(*v);
        if (!bytes)
            return t.fail("gc_max_bytes", "'" + *v + "' is not a size like \"20Gi\" (\"0\" for no limit)");
        c.images_gc_max_bytes = static_cast<std::uint64_t>(*bytes);
    }
    if (auto v = NPS_TRY(t.integer("gc_max_disk_percent", 1, 100)))
        c.images_gc_max_disk_percent = static_cast<unsigned>(*v);
    if (auto v = NPS_TRY(t.string("default_registry"))) {
        if (!image::is_valid_registry_host(*v))
            return t.fail("default_registry", "'" + *v + "' is not a registry HOST[:PORT]");
        c.images_default_registry = *v;
    }
    if (auto v = NPS_TRY(t.strings("insecure_registries"))) {
        for (const auto& host : *v)
            if (!image::is_valid_registry_host(host))
                return t.fail("insecure_registries", "'" + host + "' is not a registry HOST[:PORT]");
        c.images_insecure_registries = *v;
    }
    if (auto v = NPS_TRY(t.string("ca_file"))) {
        if (v->empty())
            return t.fail("ca_file", "must name a file");
        c.images_ca_file = *v;
    }
    return apply_registry_auth(table ? table->get("auth") : nullptr, origin, c);
}

// A byte size: an integer, or a quantity string like "1Mi".
Result<std::optional<std::uint64_t>> byte_size(const toml::table* table, const std::string& key,
                                               const TableReader& t, std::uint64_t min, std::uint64_t max)
{
    const toml::node* node = table ? table->get(key) : nullptr;
    if (!node)
        return std::optional<std::uint64_t>{};
    std::int64_t value = 0;
    if (auto v = node->value_exact<std::int64_t>()) {
        value = *v;
    } else if (auto text = node->value_exact<std::string>()) {
        auto bytes = spawn::parse_memory_bytes(*text);
        if (!bytes)
            return t.fail(key, "'" + *text + "' is not a size like \"1Mi\"");
        value = *bytes;
    } else {
        return t.fail(key, "expected a size (an integer, or a string like \"1Mi\")");
    }
    if (value < 0 || static_cast<std::uint64_t>(value) < min || static_cast<std::uint64_t>(value) > max)
        return t.fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) + " bytes");
    return std::optional<std::uint64_t>{static_cast<std::uint64_t>(value)};
}

// A CPU quantity: an integer (cores) or a string like "500m"; 0: none.
Result<std::optional<std::int64_t>> cpu_quantity(const toml::table* table, const std::string& key,
                                                 const TableReader& t)
{
    const toml::node* node = table ? table->get(key) : nullptr;
    if (!node)
        return std::optional<std::int64_t>{};
    std::int64_t millicores = 0;
    if (auto v = node->value_exact<std::int64_t>()) {
        if (*v < 0 || *v > limits::kMaxCpuMillicores / 1000)
            return t.fail(key, "must be between 0 and " + std::to_string(limits::kMaxCpuMillicores / 1000) + " CPUs");
        millicores = *v * 1000;
    } else if (auto text = node->value_exact<std::string>()) {
        auto parsed = spawn::parse_cpu_millicores(*text);
        if (!parsed)
            return t.fail(key, "'" + *text + "' is not a CPU quantity like \"500m\" or \"2\"");
        millicores = *parsed;
    } else {
        return t.fail(key, "expected a CPU quantity (an integer, or a string like \"500m\")");
    }
    if (millicores != 0 && (millicores < limits::kMinCpuMillicores || millicores > limits::kMaxCpuMillicores))
        return t.fail(key, "must be 0 (no limit) or between " + spawn::format_cpu_quantity(limits::kMinCpuMillicores) +
                               " and " + spawn::format_cpu_quantity(limits::kMaxCpuMillicores));
    return std::optional<std::int64_t>{millicores};
}

// [workers] limits: the defaults a SpawnSpec without limits gets, the
// ceilings it may ask up to, each ceiling at least its default.
Result<void> apply_worker_limits(const toml::table* table, const TableReader& t, WorkerPolicy& w)
{
    for (auto [key, target] : {std::pair{"default_memory", &w.default_memory_bytes},
                               std::pair{"max_memory", &w.max_memory_bytes}}) {
        if (auto v = NPS_TRY(byte_size(table, key, t, 0, static_cast<std::uint64_t>(INT64_MAX)))) {
            if (*v != 0 && *v < static_cast<std::uint64_t>(limits::kMinMemoryBytes))
                return t.fail(key, "must be 0 (no limit) or at least 1Mi");
            *target = static_cast<std::int64_t>(*v);
        }
    }
    if (auto v = NPS_TRY(cpu_quantity(table, "default_cpu", t)))
        w.default_cpu_millicores = *v;
    if (auto v = NPS_TRY(cpu_quantity(table, "max_cpu", t)))
        w.max_cpu_millicores = *v;
    if (auto v = NPS_TRY(t.integer("default_pids", 0, kMaxWorkerPids)))
        w.default_pids = *v;
    if (auto v = NPS_TRY(t.integer("max_pids", 0, kMaxWorkerPids)))
        w.max_pids = *v;
    if (auto v = NPS_TRY(t.integer("max_runtime_seconds_ceiling", 0, kMaxRuntimeSecondsCeiling)))
        w.max_runtime_seconds_ceiling = static_cast<std::uint32_t>(*v);

    // A default of 0 is "no limit", which no ceiling admits.
    using Show = std::string (*)(std::int64_t);
    struct Pair {
        const char* default_key;
        std::int64_t default_value;
        const char* max_key;
        std::int64_t max_value;
        Show show;
    };
    const Show plain = [](std::int64_t v) { return std::to_string(v); };
    const Pair pairs[] = {
        {"default_memory", w.default_memory_bytes, "max_memory", w.max_memory_bytes, spawn::format_memory_quantity},
        {"default_cpu", w.default_cpu_millicores, "max_cpu", w.max_cpu_millicores, spawn::format_cpu_quantity},
        {"default_pids", w.default_pids, "max_pids", w.max_pids, plain},
        {"default_max_runtime_seconds", w.default_max_runtime_seconds, "max_runtime_seconds_ceiling",
         w.max_runtime_seconds_ceiling, plain},
    };
    for (const Pair& p : pairs) {
        if (p.max_value == 0 || (p.default_value != 0 && p.default_value <= p.max_value))
            continue;
        const std::string shown = p.default_value == 0 ? "0 (no limit)" : p.show(p.default_value);
        return t.fail(p.max_key, p.show(p.max_value) + " is below workers." + p.default_key + " = " + shown +
                                     ": a ceiling must be at least its default (set workers." + p.max_key +
                                     " = 0 for no ceiling)");
    }
    // default_idle_timeout_seconds ≤ default_max_runtime_seconds (checked
    // before) ≤ the runtime ceiling, so the idle default is within it too.
    return {};
}

Result<void> apply_workers(const toml::table* table, const TableReader& t, Config& c)
{
    NPS_TRY_VOID(t.check_keys({"max_concurrent", "default_idle_timeout_seconds", "default_max_runtime_seconds",
                                "stop_grace_seconds", "log_max_bytes", "log_keep", "log_retention_hours",
                                "spawn_pool", "logs_max_bytes", "default_memory", "default_cpu", "default_pids",
                                "max_memory", "max_cpu", "max_pids", "max_runtime_seconds_ceiling", "default_disk", "max_disk"}));
    WorkerPolicy& w = c.workers;
    if (auto v = NPS_TRY(t.integer("max_concurrent", 1, static_cast<std::int64_t>(limits::kMaxConcurrentWorkers))))
        w.max_concurrent = static_cast<std::size_t>(*v);
    if (auto v = NPS_TRY(t.integer("default_idle_timeout_seconds", 0, limits::kMaxRunSeconds)))
        w.default_idle_timeout_seconds = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("default_max_runtime_seconds", 0, limits::kMaxRunSeconds)))
        w.default_max_runtime_seconds = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("stop_grace_seconds", 0, limits::kMaxStopGraceSeconds)))
        w.stop_grace_seconds = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(byte_size(table, "log_max_bytes", t, limits::kMinWorkerLogBytes, limits::kMaxWorkerLogBytes)))
        w.log_max_bytes = *v;
    if (auto v = NPS_TRY(t.integer("log_keep", 0, limits::kMaxWorkerLogKeep)))
        w.log_keep = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("log_retention_hours", 0, limits::kMaxWorkerLogRetentionHours)))
        w.log_retention_hours = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("spawn_pool", 0, static_cast<std::int64_t>(limits::kSpawnPoolMaxSize))))
        w.spawn_pool = static_cast<std::size_t>(*v);
    if (auto v = NPS_TRY(byte_size(table, "max_disk", t, limits::kMinWorkerDiskBytes, limits::kMaxWorkerDiskBytes)))
        w.max_disk = *v;
    if (auto v = NPS_TRY(byte_size(table, "default_disk", t, limits::kMinWorkerDiskBytes, limits::kMaxWorkerDiskBytes)))
        w.default_disk = *v;
    if (w.default_disk > w.max_disk)
        return t.fail("default_disk", "must not exceed max_disk (" + std::to_string(w.max_disk) + " bytes)");
    if (auto v = NPS_TRY(byte_size(table, "logs_max_bytes", t, 0, kMaxWorkerLogsTotalBytes)))
        w.logs_max_bytes = *v;
    if (w.default_idle_timeout_seconds > 0 && w.default_max_runtime_seconds > 0 &&
        w.default_idle_timeout_seconds > w.default_max_runtime_seconds)
        return t.fail("default_idle_timeout_seconds", "must not exceed default_max_runtime_seconds");
    return apply_worker_limits(table, t, w);
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

Result<void> apply_spawn(const TableReader& t, Config& c)
{
    NPS_TRY_VOID(t.check_keys({"allow_destinations", "ca_file", "registry_url", "nwp_resolver_url",
                                "fetch_timeout_seconds", "max_spec_bytes", "max_redirects", "cache_max_age_seconds",
                                "cache_entries"}));
    if (auto v = NPS_TRY(t.strings("allow_destinations"))) {
        if (v->size() > limits::kMaxSpawnAllowDestinations)
            return t.fail("allow_destinations", "more than " + std::to_string(limits::kMaxSpawnAllowDestinations) +
                                                    " entries");
        for (const auto& entry : *v)
            if (auto parsed = proto::parse_destination_allow_entry(entry); !parsed)
                return t.fail("allow_destinations", parsed.error().message);
        c.spawn_allow_destinations = *v;
    }
    if (auto v = NPS_TRY(t.string("ca_file"))) {
        if (v->empty() || v->front() != '/')
            return t.fail("ca_file", "must be an absolute path to a PEM file");
        c.spawn_ca_file = *v;
    }
    c.spawn_registry_url = NPS_TRY(service_url(t, "registry_url"));
    c.spawn_nwp_resolver_url = NPS_TRY(service_url(t, "nwp_resolver_url"));
    if (auto v = NPS_TRY(t.integer("fetch_timeout_seconds", 1, limits::kMaxSpawnFetchTimeoutSeconds)))
        c.spawn_fetch_timeout_seconds = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("max_spec_bytes", 1024, static_cast<std::int64_t>(limits::kMaxSpawnSpecBytes))))
        c.spawn_max_spec_bytes = static_cast<std::size_t>(*v);
    if (auto v = NPS_TRY(t.integer("max_redirects", 0, limits::kMaxSpawnRedirects)))
        c.spawn_max_redirects = static_cast<unsigned>(*v);
    if (auto v = NPS_TRY(t.integer("cache_max_age_seconds", 0, limits::kMaxSpawnCacheMaxAgeSeconds)))
        c.spawn_cache_max_age_seconds = *v;
    if (auto v = NPS_TRY(t.integer("cache_entries", 0, static_cast<std::int64_t>(limits::kMaxSpawnCacheEntries))))
        c.spawn_cache_entries = static_cast<std::size_t>(*v);
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
            auto raw = proto::decode_ed25519_public_key(text, "NPS-SERVER-INTERNAL", name);
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
    if (auto v = NPS_TRY(t.strings("callback_allow_destinations"))) {
        if (v->size() > limits::kMaxReportAllowDestinations)
            return t.fail("callback_allow_destinations",
                          "more than " + std::to_string(limits::kMaxReportAllowDestinations) + " entries");
        for (const auto& entry : *v)
            if (auto parsed = proto::parse_destination_allow_entry(entry); !parsed)
                return t.fail("callback_allow_destinations", parsed.error().message);
        r.callback_allow_destinations = *v;
    }
    return {};
}

}  // namespace

std::int64_t WorkerPolicy::default_max_cpu_millicores()
{
    const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    return std::max<std::int64_t>(std::int64_t{4000}, cpus > 0 ? cpus * 1000 : 0);
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
    NPS_TRY_VOID(apply_sandbox(root["sandbox"].as_table(), table("sandbox"), config));
    NPS_TRY_VOID(apply_images(root["images"].as_table(), table("images"), origin, config));
    NPS_TRY_VOID(apply_workers(root["workers"].as_table(), table("workers"), config));
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
