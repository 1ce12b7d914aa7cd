// SPDX-License-Identifier: Apache-2.0
// [sandbox]: user namespaces, host network, unenforced limits, extra system calls.
#include "sections.hpp"

namespace nps::config::detail {

Result<void> apply_sandbox(const TableReader& t, Config& c)
{
    NPS_TRY_VOID(t.check_keys({"allow_host_network", "allow_unenforced_limits", "seccomp_allow", "user_namespace",
                                "userns_first_host_id", "userns_id_count"}));
    if (const toml::node* node = t.find("user_namespace")) {
        if (auto v = node->value_exact<bool>())
            c.user_namespace = *v ? sandbox::UsernsMode::on : sandbox::UsernsMode::off;
        else if (auto text = node->value_exact<std::string>(); text && *text == "auto")
            c.user_namespace = sandbox::UsernsMode::automatic;
        else if (text && (*text == "on" || *text == "off"))
            c.user_namespace = *text == "on" ? sandbox::UsernsMode::on : sandbox::UsernsMode::off;
        else
            return t.fail("user_namespace", "must be \"auto\", \"on\" or \"off\" (or true / false)");
    }
    if (auto v = NPS_TRY(t.integer("userns_first_host_id", 1, 4'000'000'000)))
        c.userns_first_host_id = *v;
    if (auto v = NPS_TRY(t.integer("userns_id_count", 1, 1'000'000'000)))
        c.userns_id_count = *v;
    if (auto v = NPS_TRY(t.boolean("allow_host_network")))
        c.allow_host_network = *v;
    if (auto v = NPS_TRY(t.boolean("allow_unenforced_limits")))
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

}  // namespace nps::config::detail
