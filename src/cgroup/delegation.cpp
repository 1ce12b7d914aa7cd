// SPDX-License-Identifier: Apache-2.0
#include "nps/cgroup/delegation.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "nps/cgroup/cgroup_fs.hpp"

namespace nps::cgroup {
namespace {

constexpr const char* kWanted[] = {"memory", "cpu", "pids"};
// Hybrid places, kills and accounts on v2; legacy needs cpuacct for usage
// and the freezer to kill.
constexpr const char* kV1Limits[] = {"memory", "cpu", "pids"};
constexpr const char* kV1Legacy[] = {"memory", "cpu", "pids", "cpuacct", "freezer"};

std::vector<std::string> words(const std::string& text)
{
    std::vector<std::string> out;
    std::string cur;
    for (char c : text) {
        if (c == ' ' || c == '\n') {
            if (!cur.empty())
                out.push_back(std::move(cur));
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty())
        out.push_back(std::move(cur));
    return out;
}

bool contains(const std::vector<std::string>& v, std::string_view s)
{
    return std::find(v.begin(), v.end(), s) != v.end();
}

Result<std::vector<std::string>> delegate_unified(const CgroupLayout& layout)
{
    const std::string& own = layout.unified_own_dir;
    auto available = words(NPS_TRY(read_file(own + "/cgroup.controllers")));
    auto enabled = words(NPS_TRY(read_file(own + "/cgroup.subtree_control")));
    std::vector<std::string> missing;
    for (const char* c : kWanted)
        if (contains(available, c) && !contains(enabled, c))
            missing.emplace_back(c);
    if (missing.empty())
        return enabled;

    // The root cgroup is exempt from the no-internal-processes rule. "/" in
    // /proc/self/cgroup is not enough to know we are there: in a private
    // cgroup namespace (a container's entrypoint) the namespace's root reads
    // "/" too but is an ordinary cgroup. Only the real root lacks cgroup.type
    // (kernel ≥ 4.14; on older kernels we trust the path).
    bool real_root = layout.unified_own_path == "/" && !file_exists(own + "/cgroup.type");
    if (!real_root) {
        std::string leaf = own + "/runner";
        if (::mkdir(leaf.c_str(), 0755) < 0 && errno != EEXIST)
            return system_error_errno("Failed to create cgroup '" + leaf + "'");
        NPS_TRY_VOID(write_file(leaf + "/cgroup.procs", std::to_string(::getpid())));
    }
    for (const auto& c : missing)
        NPS_TRY_VOID(write_file(own + "/cgroup.subtree_control", "+" + c));
    return words(NPS_TRY(read_file(own + "/cgroup.subtree_control")));
}

}  // namespace

bool CgroupBase::unified_has(std::string_view controller) const
{
    return contains(unified_controllers, controller);
}

const std::string* CgroupBase::v1_dir(std::string_view controller) const
{
    for (const auto& h : v1)
        if (contains(h.controllers, controller))
            return &h.dir;
    return nullptr;
}

std::string_view CgroupBase::enforced_by(std::string_view controller) const
{
    if (unified_has(controller))
        return "v2";
    if (v1_dir(controller))
        return "v1";
    return "";
}

std::string CgroupBase::summary() const
{
    std::string out(to_string(mode));
    out += " (";
    const char* separator = "";
    for (const char* controller : {"memory", "cpu", "pids"}) {
        std::string_view by = enforced_by(controller);
        out += separator;
        out += controller;
        out += ": ";
        out += by.empty() ? std::string_view("not enforceable") : by;
        separator = ", ";
    }
    return out + ")";
}

Result<CgroupBase> prepare_cgroup_base(const CgroupLayout& layout)
{
    CgroupBase base;
    base.mode = layout.mode;
    if (layout.mode == CgroupMode::none)
        return base;
    if (!layout.unified_own_dir.empty()) {
        base.unified_dir = layout.unified_own_dir;
        if (layout.mode == CgroupMode::unified)
            base.unified_controllers = NPS_TRY(delegate_unified(layout));
    }
    for (const auto& h : layout.v1) {
        auto has = [&](const char* c) { return h.has(c); };
        bool used = layout.mode == CgroupMode::legacy
                        ? std::any_of(std::begin(kV1Legacy), std::end(kV1Legacy), has)
                        : std::any_of(std::begin(kV1Limits), std::end(kV1Limits), has);
        if (used)
            base.v1.push_back({h.controllers, h.own_dir});
    }
    return base;
}

}  // namespace nps::cgroup
