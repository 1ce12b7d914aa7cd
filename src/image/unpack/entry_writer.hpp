// SPDX-License-Identifier: Apache-2.0
// EntryWriter: makes one tar entry (file, directory, symlink, hard link,
// fifo, whiteout) inside a ConfinedDir. A later entry of the same name
// replaces an earlier one, as tar extraction does; an existing directory is
// kept and takes the new metadata.
#pragma once

#include <archive_entry.h>

#include <string>
#include <vector>

#include "confined_dir.hpp"
#include "entry_metadata.hpp"
#include "entry_path.hpp"
#include "layer_stream.hpp"
#include "nps/base/result.hpp"
#include "nps/image/layer_unpack.hpp"

namespace nps::image::detail {

struct EntryWriterOptions {
    DeviceNodes device_nodes = DeviceNodes::skip;
    std::uint64_t max_file_bytes = 0;  // a file's declared (apparent) size
    Durability durability = Durability::sync;
};

class EntryWriter {
public:
    EntryWriter(ConfinedDir& dir, UnpackStats& stats, EntryWriterOptions options)
        : dir_(dir), stats_(stats), options_(options)
    {
    }

    // The current entry of `stream`, whose checked path is `path`.
    Result<void> write(archive_entry* entry, const EntryPath& path, LayerStream& stream);

    // Sets the directories' times, which their entries' creation changed.
    Result<void> finish();

private:
    Result<void> regular_file(int parent, const EntryPath& path, const EntryMetadata& meta, archive_entry* entry,
                              LayerStream& stream);
    Result<void> directory(int parent, const EntryPath& path, const EntryMetadata& meta);
    Result<void> symlink(int parent, const EntryPath& path, const EntryMetadata& meta, archive_entry* entry);
    Result<void> hard_link(int parent, const EntryPath& path, const char* target);
    Result<void> fifo(int parent, const EntryPath& path, const EntryMetadata& meta);
    Result<void> whiteout(int parent, const EntryPath& path);
    Result<void> opaque(int parent, const EntryPath& path);

    // Removes whatever is at `path` so a new entry can take its place.
    Result<void> clear(int parent, const EntryPath& path);

    ConfinedDir& dir_;
    UnpackStats& stats_;
    EntryWriterOptions options_;
    struct DirTimes {
        std::string path;
        timespec times[2];
    };
    std::vector<DirTimes> dir_times_;
};

}  // namespace nps::image::detail
