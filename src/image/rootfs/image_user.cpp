// SPDX-License-Identifier: Apache-2.0
#include "nps/image/image_user.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <charconv>
#include <optional>
#include <string_view>
#include <vector>

#include "nps/base/unique_fd.hpp"

namespace nps::image {

namespace {

constexpr std::size_t kMaxAccountFileBytes = 1 << 20;

std::optional<std::uint32_t> number(std::string_view text)
{
    std::uint32_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty() || value == UINT32_MAX)
        return std::nullopt;
    return value;
}

// The text of `path` (relative to the rootfs), "" when the image lacks it.
Result<std::string> read_confined(int root_fd, const char* path)
{
    open_how how{};
    how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    UniqueFd fd(static_cast<int>(::syscall(SYS_openat2, root_fd, path, &how, sizeof how)));
    if (!fd) {
        if (errno == ENOENT)
            return std::string();
        return system_error_errno(std::string("Failed to open the image's /") + path);
    }
    std::string text;
    char buffer[65536];
    for (ssize_t n; (n = ::read(fd.get(), buffer, sizeof buffer)) != 0;) {
        if (n < 0)
            return system_error_errno(std::string("Failed to read the image's /") + path);
        text.append(buffer, static_cast<std::size_t>(n));
        if (text.size() > kMaxAccountFileBytes)
            return internal_error(std::string("The image's /") + path + " is larger than 1 MiB");
    }
    return text;
}

// Fields of the line whose first field is `name` (or, by number, whose third
// field is `id`), from a passwd or group file.
std::optional<std::vector<std::string_view>> find_entry(std::string_view text, std::string_view name,
                                                        std::optional<std::uint32_t> id)
{
    while (!text.empty()) {
        auto end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        std::vector<std::string_view> fields;
        for (std::size_t start = 0;;) {
            auto colon = line.find(':', start);
            fields.push_back(line.substr(start, colon - start));
            if (colon == std::string_view::npos)
                break;
            start = colon + 1;
        }
        if (fields.size() < 3)
            continue;
        if ((id && number(fields[2]) == id) || (!id && fields[0] == name))
            return fields;
    }
    return std::nullopt;
}

}  // namespace

Result<ProcessIds> resolve_image_user(const std::string& user, const std::string& rootfs)
{
    ProcessIds ids;
    if (user.empty())
        return ids;
    auto colon = user.find(':');
    std::string_view who = std::string_view(user).substr(0, colon);
    std::optional<std::string_view> group;
    if (colon != std::string::npos)
        group = std::string_view(user).substr(colon + 1);
    if (who.empty() || (group && group->empty()))
        return internal_error("The image's User '" + user + "' is malformed");

    UniqueFd root(::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root)
        return system_error_errno("Failed to open the image rootfs '" + rootfs + "'");

    auto uid = number(who);
    std::optional<std::uint32_t> passwd_gid;
    if (!uid || !group) {
        std::string passwd = NPS_TRY(read_confined(root.get(), "etc/passwd"));
        auto entry = find_entry(passwd, who, uid);
        if (!entry && !uid)
            return internal_error("The image's User '" + std::string(who) + "' is not in its /etc/passwd");
        if (entry) {
            uid = number((*entry)[2]);
            if (entry->size() > 3)
                passwd_gid = number((*entry)[3]);
            if (!uid)
                return internal_error("The image's /etc/passwd has a malformed entry for '" + std::string(who) + "'");
        }
    }
    ids.uid = *uid;
    ids.gid = passwd_gid.value_or(0);
    if (group) {
        auto gid = number(*group);
        if (!gid) {
            std::string groups = NPS_TRY(read_confined(root.get(), "etc/group"));
            auto entry = find_entry(groups, *group, std::nullopt);
            if (!entry || !(gid = number((*entry)[2])))
                return internal_error("The image's group '" + std::string(*group) + "' is not in its /etc/group");
        }
        ids.gid = *gid;
    }
    return ids;
}

}  // namespace nps::image
