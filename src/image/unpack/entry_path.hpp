// SPDX-License-Identifier: Apache-2.0
// The path of a tar entry (or of a hard link's target), checked and split
// into the directory it lives in and its own name.
#pragma once

#include <string>
#include <string_view>

#include "nps/base/result.hpp"

namespace nps::image::detail {

struct EntryPath {
    std::string parent;  // "a/b", relative to the layer root; "" is the root
    std::string name;    // "c"; "" when the entry is the layer root itself
    bool aufs_meta = false;  // beneath or named ".wh..wh.*" (but not the opaque marker)
    std::string full() const { return parent.empty() ? name : name.empty() ? parent : parent + "/" + name; }
};

// Accepts relative paths; "." and empty components are dropped ("./a//b/"
// is "a/b"). Refuses (naming `raw`) an absolute path, a ".." component, a
// path longer than limits::kLayerMaxPathBytes, and a whiteout name
// (".wh.*") used as a directory. AUFS metadata (".wh..wh.*", such as
// ".wh..wh.plnk/…") is flagged, not refused: the caller skips it.
Result<EntryPath> parse_entry_path(std::string_view raw);

inline constexpr std::string_view kWhiteoutPrefix = ".wh.";
inline constexpr std::string_view kOpaqueWhiteout = ".wh..wh..opq";
// AUFS metadata (".wh..wh.plnk" and the like): never a whiteout for overlay.
inline constexpr std::string_view kAufsMetaPrefix = ".wh..wh.";

}  // namespace nps::image::detail
