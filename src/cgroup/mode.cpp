// SPDX-License-Identifier: Apache-2.0
#include "nps/cgroup/mode.hpp"

#include <algorithm>
#include <optional>

#include "nps/cgroup/cgroup_fs.hpp"

namespace nps::cgroup {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep)
{
    std::vector<std::string_view> out;
    for (;;) {
        auto pos = s.find(sep);
        out.push_back(s.substr(0, pos));
        if (pos == std::string_view::npos)
            return out;
        s.remove_prefix(pos + 1);
    }
}

std::vector<std::string_view> lines(std::string_view text)
{
    std::vector<std::string_view> out;
    for (auto line : split(text, '\n'))
        if (!line.empty())
            out.push_back(line);
    return out;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view s)
{
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() &&
            s[i + 1] >= '0' && s[i + 1] <= '7' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
            s[i + 3] >= '0' && s[i + 3] <= '7') {
            out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

struct Mount {
    std::string root;
    std::string point;
    std::string fstype;
    std::vector<std::string> super_options;
};

std::vector<Mount> cgroup_mounts(std::string_view mountinfo)
{
    std::vector<Mount> out;
    for (auto line : lines(mountinfo)) {
        auto f = split(line, ' ');
        auto dash = std::find(f.begin(), f.end(), "-");
        if (f.size() < 6 || dash == f.end() || f.end() - dash < 4)
            continue;
        std::string_view fstype = dash[1];
        if (fstype != "cgroup" && fstype != "cgroup2")
            continue;
        Mount m{unescape(f[3]), unescape(f[4]), std::string(fstype), {}};
        for (auto o : split(dash[3], ','))
            m.super_options.emplace_back(o);
        out.push_back(std::move(m));
    }
    return out;
}

// Our directory in a mount whose root is `root`, or nothing when our cgroup
// is not beneath it.
std::optional<std::string> own_dir(const Mount& m, const std::string& own_path)
{
    if (m.root == "/")
        return own_path == "/" ? m.point : m.point + own_path;
    if (own_path == m.root)
        return m.point;
    if (own_path.size() > m.root.size() && own_path.compare(0, m.root.size(), m.root) == 0 &&
        own_path[m.root.size()] == '/')
        return m.point + own_path.substr(m.root.size());
    return std::nullopt;
}

bool has_option(const Mount& m, std::string_view option)
{
    return std::find(m.super_options.begin(), m.super_options.end(), option) != m.super_options.end();
}

}  // namespace

std::string_view to_string(CgroupMode mode)
{
    switch (mode) {
    case CgroupMode::unified: return "unified";
    case CgroupMode::hybrid: return "hybrid";
    case CgroupMode::legacy: return "legacy";
    case CgroupMode::none: return "none";
    }
    return "none";
}

bool V1Hierarchy::has(std::string_view controller) const
{
    return std::find(controllers.begin(), controllers.end(), controller) != controllers.end();
}

const V1Hierarchy* CgroupLayout::v1_for(std::string_view controller) const
{
    for (const auto& h : v1)
        if (h.has(controller))
            return &h;
    return nullptr;
}

Result<CgroupLayout> parse_cgroup_layout(std::string_view proc_self_cgroup, std::string_view mountinfo)
{
    auto mounts = cgroup_mounts(mountinfo);
    CgroupLayout layout;
    for (auto line : lines(proc_self_cgroup)) {
        auto first = line.find(':');
        auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
        if (second == std::string_view::npos)
            return internal_error("Unexpected line '" + std::string(line) + "' in /proc/self/cgroup");
        std::string_view id = line.substr(0, first);
        std::string_view controllers = line.substr(first + 1, second - first - 1);
        std::string path(line.substr(second + 1));
        if (path.empty() || path[0] != '/')
            return internal_error("Unexpected path in line '" + std::string(line) + "' of /proc/self/cgroup");

        if (id == "0" && controllers.empty()) {
            for (const auto& m : mounts) {
                if (m.fstype != "cgroup2")
                    continue;
                if (auto dir = own_dir(m, path)) {
                    layout.unified_mount = m.point;
                    layout.unified_own_path = path;
                    layout.unified_own_dir = *dir;
                    break;
                }
            }
            continue;
        }

        V1Hierarchy h;
        for (auto c : split(controllers, ','))
            if (!c.empty() && c.substr(0, 5) != "name=")
                h.controllers.emplace_back(c);
        if (h.controllers.empty())
            continue;  // a named hierarchy (name=systemd): no resource control
        for (const auto& m : mounts) {
            if (m.fstype != "cgroup")
                continue;
            bool all = std::all_of(h.controllers.begin(), h.controllers.end(),
                                   [&](const std::string& c) { return has_option(m, c); });
            if (!all)
                continue;
            if (auto dir = own_dir(m, path)) {
                h.mount_point = m.point;
                h.own_path = path;
                h.own_dir = *dir;
                h.favordynmods = has_option(m, "favordynmods");
                layout.v1.push_back(std::move(h));
                break;
            }
        }
    }

    bool unified = !layout.unified_mount.empty();
    if (!layout.v1.empty())
        layout.mode = unified ? CgroupMode::hybrid : CgroupMode::legacy;
    else
        layout.mode = unified ? CgroupMode::unified : CgroupMode::none;
    return layout;
}

Result<CgroupLayout> detect_cgroup_layout()
{
    std::string cgroup = NPS_TRY(read_file("/proc/self/cgroup"));
    std::string mountinfo = NPS_TRY(read_file("/proc/self/mountinfo"));
    return parse_cgroup_layout(cgroup, mountinfo);
}

}  // namespace nps::cgroup
