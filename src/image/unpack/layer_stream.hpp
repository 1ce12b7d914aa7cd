// SPDX-License-Identifier: Apache-2.0
// LayerStream: the tar entries of a layer blob, read with libarchive, with
// the SHA-256 of the uncompressed tar stream taken on the way.
//
// Two libarchive readers are chained: the outer one runs the decompression
// filter (gzip, zstd or none) with the "raw" format, so its data is the
// uncompressed tar stream; the inner one parses tar from that stream through
// a read callback, which hashes and counts every byte it hands over. finish()
// reads whatever follows the end-of-archive marker, so the digest covers the
// whole stream, as a diff_id does.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <cstdint>
#include <optional>
#include <string>

#include "nps/base/digest.hpp"
#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/image/layer_unpack.hpp"
#include "nps/image/sha256_stream.hpp"

namespace nps::image::detail {

struct DataBlock {
    const void* data = nullptr;
    std::size_t size = 0;
    std::int64_t offset = 0;  // within the entry's file; a gap is a hole
};

class LayerStream {
public:
    LayerStream() = default;
    ~LayerStream();
    LayerStream(const LayerStream&) = delete;
    LayerStream& operator=(const LayerStream&) = delete;

    // Opens the blob; fails when it cannot be read or does not carry the
    // compression given. max_bytes caps the uncompressed stream.
    Result<void> open(const std::string& blob_path, Compression compression, std::uint64_t max_bytes);

    // The next entry, or nullptr after the last one. Valid until the next call.
    Result<archive_entry*> next_entry();
    // The current entry's next data block; nullopt at its end.
    Result<std::optional<DataBlock>> next_block();
    // After next_entry() returned nullptr: reads the rest of the stream and
    // returns its digest.
    Result<Sha256> finish();

    std::uint64_t bytes() const { return bytes_; }

private:
    static la_ssize_t read_callback(archive* inner, void* self, const void** buffer);
    la_ssize_t pull(const void** buffer);
    Error failure(const char* what, archive* a);

    std::string blob_path_;
    UniqueFd fd_;
    archive* outer_ = nullptr;
    archive* inner_ = nullptr;
    Sha256Stream hash_;
    std::uint64_t bytes_ = 0;
    std::uint64_t max_bytes_ = 0;
    std::optional<Error> pull_error_;  // why the read callback stopped the inner reader
};

}  // namespace nps::image::detail
