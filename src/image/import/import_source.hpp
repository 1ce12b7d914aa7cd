// SPDX-License-Identifier: Apache-2.0
// Internal to image/: what an import reads from — an image directory (OCI
// layout, or an unpacked docker-archive) or a tar archive of one (read with
// libarchive; gzip/zstd/xz-compressed archives work too). Paths are relative
// to the image's root, '/'-separated, without "./" ("blobs/sha256/<hex>").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::image::detail {

class ByteReader {
public:
    virtual ~ByteReader() = default;
    // Up to `size` bytes; 0 at the end.
    virtual Result<std::size_t> read(char* data, std::size_t size) = 0;
};

class ImportSource {
public:
    virtual ~ImportSource() = default;

    // "'/srv/busybox.tar'": how errors name the source.
    virtual std::string describe() const = 0;
    // The file a path names after following the links inside the source
    // (docker-archives link duplicate layers); nullopt when there is no
    // regular file at `path`.
    virtual Result<std::optional<std::string>> canonical(const std::string& path) = 0;
    virtual Result<std::optional<std::uint64_t>> file_size(const std::string& path) = 0;
    // A small file's content; an error when missing or over max_bytes.
    virtual Result<std::string> read_small(const std::string& path, std::size_t max_bytes) = 0;
    // Calls fn once for each of the canonical `paths`, in the source's own
    // order (an archive is read front to back once); an error when one is
    // missing.
    using StreamFn = std::function<Result<void>(const std::string& path, ByteReader& reader)>;
    virtual Result<void> stream(const std::set<std::string>& paths, const StreamFn& fn) = 0;
};

// A directory → directory source; anything else → archive source.
Result<std::unique_ptr<ImportSource>> open_import_source(const std::string& path);

// The source of an OCI layout directory `root`, open as `root_fd`.
std::unique_ptr<ImportSource> make_directory_source(std::string root, UniqueFd root_fd);

// For tests and the archive reader: an archive member name in canonical
// form ("./a//b" → "a/b"); nullopt for names that climb out ("..") or are empty.
std::optional<std::string> normalize_member_path(std::string_view name);

}  // namespace nps::image::detail
