// SPDX-License-Identifier: Apache-2.0
// The dashboard's files (src/ui/assets/), embedded in the binary at build
// time by src/ui/embed_assets.py: HTML, CSS and JavaScript, served under
// /ui/ with no network fetch (docs/dashboard.md).
#pragma once

#include <span>
#include <string_view>

namespace nps::ui {

struct Asset {
    std::string_view path;          // relative to src/ui/assets/, e.g. "js/app.js"
    std::string_view content_type;  // with charset for text
    std::string_view body;
    std::string_view etag;          // "\"<first 16 hex digits of its SHA-256>\""
};

// Every embedded file.
std::span<const Asset> assets();
// The file at `path` (relative, as in Asset::path), or nullptr.
const Asset* find_asset(std::string_view path);

}  // namespace nps::ui
