// SPDX-License-Identifier: Apache-2.0
// [images] and [images.auth."HOST[:PORT]"]: the image store's limits and the registries.
#include "nps/image/reference.hpp"
#include "nps/spawn/quantity.hpp"
#include "sections.hpp"

namespace nps::config::detail {

namespace {

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
        image::RegistryCredentials entry;
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
        for (const auto& [known, _] : c.registries.credentials)
            if (image::same_registry(known, registry))
                return t.fail("username", "the registry '" + registry + "' is configured twice");
        c.registries.credentials.emplace(registry, std::move(entry));
    }
    return {};
}

}  // namespace

Result<void> apply_images(const TableReader& t, Config& c)
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
        c.registries.default_registry = *v;
    }
    if (auto v = NPS_TRY(t.strings("insecure_registries"))) {
        for (const auto& host : *v)
            if (!image::is_valid_registry_host(host))
                return t.fail("insecure_registries", "'" + host + "' is not a registry HOST[:PORT]");
        c.registries.insecure_registries = *v;
    }
    if (auto v = NPS_TRY(t.string("ca_file"))) {
        if (v->empty())
            return t.fail("ca_file", "must name a file");
        c.registries.ca_file = *v;
    }
    return apply_registry_auth(t.find("auth"), t.origin(), c);
}

}  // namespace nps::config::detail
