// SPDX-License-Identifier: Apache-2.0
#include "entry_path.hpp"

#include <vector>

#include "nps/base/limits.hpp"

namespace nps::image::detail {

namespace {

Error refuse(std::string_view raw, const char* why)
{
    return internal_error("Refusing layer entry '" + std::string(raw.substr(0, 256)) + "': " + why);
}

}  // namespace

Result<EntryPath> parse_entry_path(std::string_view raw)
{
    if (raw.size() > limits::kLayerMaxPathBytes)
        return refuse(raw, "its path is longer than the layer path limit");
    if (!raw.empty() && raw.front() == '/')
        return refuse(raw, "absolute path");
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (start <= raw.size()) {
        std::size_t end = raw.find('/', start);
        if (end == std::string_view::npos)
            end = raw.size();
        std::string_view part = raw.substr(start, end - start);
        if (part == "..")
            return refuse(raw, "'..' in its path");
        if (!part.empty() && part != ".")
            parts.push_back(part);
        start = end + 1;
    }
    EntryPath path;
    if (parts.empty())
        return path;
    auto starts_with = [](std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; };
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        if (starts_with(parts[i], kAufsMetaPrefix))
            path.aufs_meta = true;
        else if (starts_with(parts[i], kWhiteoutPrefix))
            return refuse(raw, "a whiteout name used as a directory");
        if (!path.parent.empty())
            path.parent += '/';
        path.parent += parts[i];
    }
    path.name = parts.back();
    if (starts_with(path.name, kAufsMetaPrefix) && path.name != kOpaqueWhiteout)
        path.aufs_meta = true;
    return path;
}

}  // namespace nps::image::detail
